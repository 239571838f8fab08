#ifndef SESSIONMESH_CMOSQUITTO_SHIM_H
#define SESSIONMESH_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
/* The readiness watcher's wake-up descriptor (MeshMQTT/SocketReadinessWatcher.swift). */
#include <sys/eventfd.h>
#endif
