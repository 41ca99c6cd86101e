/* pto/export.h: symbol visibility for the public API. */
#ifndef PTO_EXPORT_H
#define PTO_EXPORT_H

#if defined(PTO_STATIC)
#define PTO_API
#elif defined(_WIN32)
#ifdef PTO_BUILDING
#define PTO_API __declspec(dllexport)
#else
#define PTO_API __declspec(dllimport)
#endif
#else
#define PTO_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define PTO_EXTERN_C_BEGIN extern "C" {
#define PTO_EXTERN_C_END }
#else
#define PTO_EXTERN_C_BEGIN
#define PTO_EXTERN_C_END
#endif

#endif /* PTO_EXPORT_H */
