#ifndef SESSIONMESH_CSODIUM_SHIM_H
#define SESSIONMESH_CSODIUM_SHIM_H
#include <sodium.h>
#endif
