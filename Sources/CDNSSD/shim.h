// The DNS-SD API: the system's on macOS, Avahi's compatibility library on Linux
// (package libavahi-compat-libdnssd-dev, which installs it under its own directory).
#if __has_include(<dns_sd.h>)
#include <dns_sd.h>
#else
#include <avahi-compat-libdns_sd/dns_sd.h>
#endif
