#ifndef LATTICE_CSODIUM_SHIM_H
#define LATTICE_CSODIUM_SHIM_H
#include <sodium.h>
#endif
