// The DNS-SD API: Avahi's compatibility library on Linux (its include
// directory and -ldns_sd come from pkg-config), the system's on macOS.
#include <dns_sd.h>
