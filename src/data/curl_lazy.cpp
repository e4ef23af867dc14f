// libcurl, loaded on the first download (`ember data fetch`) instead of linked: libcurl pulls in
// ~27 libraries (TLS, Kerberos, LDAP, SSH, ...), which every process mapped at start-up and the GPU
// check's bundle had to carry (5 MB of its 40 MiB, scripts/gpu-bundle.sh). The curl entry points
// fetch.cpp calls are defined here as forwarders to dlsym'ed functions of libcurl.so.4, compiled
// with hidden visibility (CMakeLists.txt) so a program that links libcurl itself keeps its own.
// A missing libcurl is an IOError that says how to install it.
#define CURL_DISABLE_TYPECHECK  // curl_easy_setopt / getinfo are defined here, not type-checking macros
#include <curl/curl.h>
#include <dlfcn.h>

#include <cstdarg>
#include <mutex>
#include <string>

#include "ember/core/error.h"

namespace ember::data {
namespace {
constexpr const char* kCurlSoname = "libcurl.so.4";

void* curl_symbol(const char* name) {
  static void* handle = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    handle = dlopen(kCurlSoname, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) error = dlerror();
  });
  if (handle == nullptr)
    throw IOError(detail::cat("downloads need libcurl, which could not be loaded (", kCurlSoname, "): ", error),
                  "install it (Debian/Ubuntu: `apt install libcurl4`), or copy the dataset files by hand");
  void* f = dlsym(handle, name);
  if (f == nullptr)
    throw IOError(detail::cat(kCurlSoname, " has no symbol ", name, " (a libcurl older than 7.x?)"),
                  "install a current libcurl (Debian/Ubuntu: `apt install libcurl4`)");
  return f;
}
template <class Fn> Fn curl_fn(const char* name) { return reinterpret_cast<Fn>(curl_symbol(name)); }
}  // namespace
}  // namespace ember::data

using ember::data::curl_fn;

extern "C" {
CURLcode curl_global_init(long flags) {
  static const auto f = curl_fn<CURLcode (*)(long)>("curl_global_init");
  return f(flags);
}
CURL* curl_easy_init(void) {
  static const auto f = curl_fn<CURL* (*)()>("curl_easy_init");
  return f();
}
void curl_easy_cleanup(CURL* h) {
  static const auto f = curl_fn<void (*)(CURL*)>("curl_easy_cleanup");
  f(h);
}
CURLcode curl_easy_perform(CURL* h) {
  static const auto f = curl_fn<CURLcode (*)(CURL*)>("curl_easy_perform");
  return f(h);
}
const char* curl_easy_strerror(CURLcode code) {
  static const auto f = curl_fn<const char* (*)(CURLcode)>("curl_easy_strerror");
  return f(code);
}
// The one variadic argument's type follows from the option's range, as in libcurl itself: long,
// then object and function pointers, then curl_off_t, then blobs (pointers).
CURLcode curl_easy_setopt(CURL* h, CURLoption option, ...) {
  static const auto f = curl_fn<CURLcode (*)(CURL*, CURLoption, ...)>("curl_easy_setopt");
  va_list ap;
  va_start(ap, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    const long v = va_arg(ap, long);
    rc = f(h, option, v);
  } else if (option < CURLOPTTYPE_OFF_T) {
    void* v = va_arg(ap, void*);
    rc = f(h, option, v);
  } else if (option < CURLOPTTYPE_BLOB) {
    const curl_off_t v = va_arg(ap, curl_off_t);
    rc = f(h, option, v);
  } else {
    void* v = va_arg(ap, void*);
    rc = f(h, option, v);
  }
  va_end(ap);
  return rc;
}
CURLcode curl_easy_getinfo(CURL* h, CURLINFO info, ...) {  // every CURLINFO takes a pointer
  static const auto f = curl_fn<CURLcode (*)(CURL*, CURLINFO, ...)>("curl_easy_getinfo");
  va_list ap;
  va_start(ap, info);
  void* out = va_arg(ap, void*);
  va_end(ap);
  return f(h, info, out);
}
}
