// Latency floor for mesh-bench delivery: app -> Unix socket -> relay A (epoll) -> loopback UDP
// -> relay B (epoll) -> Unix socket -> app, with nothing else (no crypto, no framing).
// Build and run: cc -O2 -o /tmp/floor scripts/latency-floor.c && /tmp/floor
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <sys/wait.h>
static long long now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static int cmp(const void*a,const void*b){long long x=*(long long*)a,y=*(long long*)b;return x<y?-1:x>y;}
int main(){
  int ua[2], ub[2]; socketpair(AF_UNIX,SOCK_STREAM,0,ua); socketpair(AF_UNIX,SOCK_STREAM,0,ub);
  int sa=socket(AF_INET,SOCK_DGRAM,0), sb=socket(AF_INET,SOCK_DGRAM,0);
  struct sockaddr_in aa={.sin_family=AF_INET,.sin_addr.s_addr=htonl(0x7f000001)}, ab=aa;
  bind(sa,(void*)&aa,sizeof aa); bind(sb,(void*)&ab,sizeof ab);
  socklen_t l=sizeof aa; getsockname(sa,(void*)&aa,&l); l=sizeof ab; getsockname(sb,(void*)&ab,&l);
  char buf[2048];
  if(fork()==0){ // relay A: unix ua[1] -> udp to B
    int ep=epoll_create1(0); struct epoll_event e={.events=EPOLLIN,.data.fd=ua[1]}; epoll_ctl(ep,EPOLL_CTL_ADD,ua[1],&e);
    for(;;){struct epoll_event ev[8]; int n=epoll_wait(ep,ev,8,5000); if(n<=0) _exit(0);
      int r=read(ua[1],buf,sizeof buf); if(r<=0)_exit(0); sendto(sa,buf,r,0,(void*)&ab,sizeof ab);}
  }
  if(fork()==0){ // relay B: udp -> unix ub[1]
    int ep=epoll_create1(0); struct epoll_event e={.events=EPOLLIN,.data.fd=sb}; epoll_ctl(ep,EPOLL_CTL_ADD,sb,&e);
    for(;;){struct epoll_event ev[8]; int n=epoll_wait(ep,ev,8,5000); if(n<=0) _exit(0);
      int r=recv(sb,buf,sizeof buf,0); if(r<=0)_exit(0); write(ub[1],buf,r);}
  }
  int N=20000; long long *s=malloc(N*sizeof(long long)); memset(buf,7,200);
  for(int i=0;i<N+500;i++){ long long t=now(); write(ua[0],buf,200); int got=0; while(got<200){int r=read(ub[0],buf,200-got); if(r<=0)return 1; got+=r;} if(i>=500) s[i-500]=now()-t; }
  qsort(s,N,sizeof(long long),cmp);
  printf("floor app->A->B->app: p50 %.1f us p99 %.1f us p999 %.1f us\n", s[N/2]/1e3, s[N*99/100]/1e3, s[N*999/1000]/1e3);
  close(ua[0]); close(ub[0]); while(wait(NULL)>0); return 0;
}
