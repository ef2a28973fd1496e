// The DNS-SD API: the system's on macOS; on Linux Avahi's compatibility library
// (package libavahi-compat-libdnssd-dev), with Avahi's allocator hook, used to make
// its allocations zeroed (see ServiceDiscovery.swift).
#if __APPLE__
#include <dns_sd.h>
#else
#include <avahi-compat-libdns_sd/dns_sd.h>
#include <avahi-common/malloc.h>
#endif
