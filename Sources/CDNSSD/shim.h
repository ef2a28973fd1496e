// The DNS-SD API: the system's on macOS; on Linux Avahi's compatibility library
// (package libavahi-compat-libdnssd-dev), with Avahi's allocator hook, used to make
// its allocations zeroed (see ServiceDiscovery.swift).
//
// Swift calls the lattice_ wrappers below. On Linux they load Avahi's libraries
// when discovery first uses them: linked, they and the dozen libraries they
// pull in (D-Bus, systemd, gcrypt, three compressors) were loaded and
// relocated at the start of every `lattice` command, discovering or not.
// What a wrapper returns when the library is missing: DNS-SD's "service not running".
#define LATTICE_DNSSD_NOT_LOADED ((DNSServiceErrorType)-65563)

#if __APPLE__
#include <dns_sd.h>
#define LATTICE_DNSSD(name) (&name)
#else
#include <avahi-compat-libdns_sd/dns_sd.h>
#include <avahi-common/malloc.h>
#include <dlfcn.h>
#include <stddef.h>

static inline void *lattice_dnssd_symbol(const char *library, const char *name) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    return handle ? dlsym(handle, name) : NULL;
}

// The function, looked up once, or NULL when the library or the symbol is missing
// (discovery then reports the daemon unavailable).
#define LATTICE_DNSSD(name) ({ \
    static __typeof__(&name) lattice_cached; \
    if (!lattice_cached) lattice_cached = (__typeof__(&name))lattice_dnssd_symbol("libdns_sd.so.1", #name); \
    lattice_cached; })
#endif

static inline DNSServiceErrorType lattice_DNSServiceRegister(
    DNSServiceRef *sdRef, DNSServiceFlags flags, uint32_t interfaceIndex, const char *name, const char *regtype,
    const char *domain, const char *host, uint16_t port, uint16_t txtLen, const void *txtRecord,
    DNSServiceRegisterReply callBack, void *context) {
    __typeof__(&DNSServiceRegister) function = LATTICE_DNSSD(DNSServiceRegister);
    if (!function) return LATTICE_DNSSD_NOT_LOADED;
    return function(sdRef, flags, interfaceIndex, name, regtype, domain, host, port, txtLen, txtRecord, callBack, context);
}

static inline DNSServiceErrorType lattice_DNSServiceBrowse(
    DNSServiceRef *sdRef, DNSServiceFlags flags, uint32_t interfaceIndex, const char *regtype, const char *domain,
    DNSServiceBrowseReply callBack, void *context) {
    __typeof__(&DNSServiceBrowse) function = LATTICE_DNSSD(DNSServiceBrowse);
    if (!function) return LATTICE_DNSSD_NOT_LOADED;
    return function(sdRef, flags, interfaceIndex, regtype, domain, callBack, context);
}

static inline DNSServiceErrorType lattice_DNSServiceResolve(
    DNSServiceRef *sdRef, DNSServiceFlags flags, uint32_t interfaceIndex, const char *name, const char *regtype,
    const char *domain, DNSServiceResolveReply callBack, void *context) {
    __typeof__(&DNSServiceResolve) function = LATTICE_DNSSD(DNSServiceResolve);
    if (!function) return LATTICE_DNSSD_NOT_LOADED;
    return function(sdRef, flags, interfaceIndex, name, regtype, domain, callBack, context);
}

static inline DNSServiceErrorType lattice_DNSServiceQueryRecord(
    DNSServiceRef *sdRef, DNSServiceFlags flags, uint32_t interfaceIndex, const char *fullname, uint16_t rrtype,
    uint16_t rrclass, DNSServiceQueryRecordReply callBack, void *context) {
    __typeof__(&DNSServiceQueryRecord) function = LATTICE_DNSSD(DNSServiceQueryRecord);
    if (!function) return LATTICE_DNSSD_NOT_LOADED;
    return function(sdRef, flags, interfaceIndex, fullname, rrtype, rrclass, callBack, context);
}

static inline int lattice_DNSServiceRefSockFD(DNSServiceRef sdRef) {
    __typeof__(&DNSServiceRefSockFD) function = LATTICE_DNSSD(DNSServiceRefSockFD);
    return function ? function(sdRef) : -1;
}

static inline DNSServiceErrorType lattice_DNSServiceProcessResult(DNSServiceRef sdRef) {
    __typeof__(&DNSServiceProcessResult) function = LATTICE_DNSSD(DNSServiceProcessResult);
    return function ? function(sdRef) : LATTICE_DNSSD_NOT_LOADED;
}

static inline void lattice_DNSServiceRefDeallocate(DNSServiceRef sdRef) {
    __typeof__(&DNSServiceRefDeallocate) function = LATTICE_DNSSD(DNSServiceRefDeallocate);
    if (function) function(sdRef);
}

#if !__APPLE__
// Returns 0 when Avahi's common library is missing (nothing of Avahi's runs then).
static inline int lattice_avahi_set_allocator(const AvahiAllocator *allocator) {
    __typeof__(&avahi_set_allocator) function = (__typeof__(&avahi_set_allocator))lattice_dnssd_symbol("libavahi-common.so.3", "avahi_set_allocator");
    if (!function) return 0;
    function(allocator);
    return 1;
}
#endif
