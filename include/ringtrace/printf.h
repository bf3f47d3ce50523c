/*
 * ringtrace/printf.h - binary printf, in the manner of the kernel's
 * trace_printk().
 *
 *   ringtrace_printf("req %d took %llu us on %s", id, us, host);
 *
 * The compiler checks the format against the arguments (format(printf)).
 * The call site records only an id for the format (registered once per
 * call site, on its first enabled call) and the raw argument values: the
 * argument types are worked out at compile time (_Generic in C, overloads
 * in C++), so nothing parses the format while recording. Strings are
 * copied (up to RINGTRACE_STRING_MAX bytes). Formatting happens when the
 * trace is read (ringtrace_printf_format()). Seed 002 measured dynamic
 * format parsing at about the cost of the whole probe call; this avoids it.
 *
 * Up to 8 arguments. The format must be a string literal. Arguments for %p
 * must be pointers (any pointer type in C++, void * in C). Recording is
 * enabled like an event: ringtrace_event_enable("ringtrace_printf").
 *
 * Record layout (event id RINGTRACE_EVENT_ID_PRINTF): u32 site id, u32
 * number of argument bytes that follow (so that CTF can describe the
 * record as a byte sequence), then per argument: a string as u32 length +
 * bytes (no NUL) then padding to 8; anything else padded to 8 then 8 bytes
 * (int64, uint64, double or pointer). The count and types of the
 * arguments are the call site's.
 */
#ifndef RINGTRACE_PRINTF_H
#define RINGTRACE_PRINTF_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/event.h"

/* Argument types as recorded. */
enum ringtrace_pf_type {
	RINGTRACE_PF_S64 = 1,
	RINGTRACE_PF_U64 = 2,
	RINGTRACE_PF_DOUBLE = 3,
	RINGTRACE_PF_STRING = 4,
	RINGTRACE_PF_POINTER = 5,
};

#define RINGTRACE_PRINTF_MAX_ARGS 8

#ifdef __cplusplus
extern "C" {
#endif

struct ringtrace_printf_site {
	const char *fmt;
	const char *file;
	uint32_t line;
	uint32_t id;          /* 0 until the first enabled call registers it */
	uint32_t nargs;
	uint32_t pad;
	const uint8_t *types; /* enum ringtrace_pf_type per argument */
};

extern struct ringtrace_event_desc ringtrace_event_ringtrace_printf;

void ringtrace_printf_record_(struct ringtrace_printf_site *site, const uint64_t *vals);

/* The registered call site with this id, or NULL. */
const struct ringtrace_printf_site *ringtrace_printf_site_by_id(uint32_t id);
/* Number of call sites registered so far (ids are 1 .. n). */
uint32_t ringtrace_printf_site_count(void);

/*
 * Format a ringtrace_printf record's payload with its site's format.
 * Returns the length that would have been written (as snprintf), or
 * -RINGTRACE_ECORRUPT with a message if the record does not match the
 * site (an argument that does not fit in the record's argument bytes).
 */
int ringtrace_printf_format(const char *fmt, const uint8_t *types, uint32_t nargs,
			    const void *payload, size_t len, char *buf, size_t size);

static inline void ringtrace_printf_check_(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void ringtrace_printf_check_(const char *fmt, ...)
{
	(void)fmt;
}

static inline uint64_t ringtrace_pf_s64_(int64_t v) { return (uint64_t)v; }
static inline uint64_t ringtrace_pf_u64_(uint64_t v) { return v; }
static inline uint64_t ringtrace_pf_dbl_(double v)
{
	uint64_t u;
	__builtin_memcpy(&u, &v, 8);
	return u;
}
static inline uint64_t ringtrace_pf_str_(const char *s) { return (uint64_t)(uintptr_t)s; }
static inline uint64_t ringtrace_pf_ptr_(const void *p) { return (uint64_t)(uintptr_t)p; }

#ifdef __cplusplus
}

#include <type_traits>

namespace ringtrace_pf {
/* The argument's type, decayed, without evaluating the argument. */
template <class T> using decay_t = typename std::decay<T>::type;
constexpr uint8_t type(bool) { return RINGTRACE_PF_U64; }
constexpr uint8_t type(char) { return RINGTRACE_PF_S64; }
constexpr uint8_t type(signed char) { return RINGTRACE_PF_S64; }
constexpr uint8_t type(unsigned char) { return RINGTRACE_PF_U64; }
constexpr uint8_t type(short) { return RINGTRACE_PF_S64; }
constexpr uint8_t type(unsigned short) { return RINGTRACE_PF_U64; }
constexpr uint8_t type(int) { return RINGTRACE_PF_S64; }
constexpr uint8_t type(unsigned) { return RINGTRACE_PF_U64; }
constexpr uint8_t type(long) { return RINGTRACE_PF_S64; }
constexpr uint8_t type(unsigned long) { return RINGTRACE_PF_U64; }
constexpr uint8_t type(long long) { return RINGTRACE_PF_S64; }
constexpr uint8_t type(unsigned long long) { return RINGTRACE_PF_U64; }
constexpr uint8_t type(float) { return RINGTRACE_PF_DOUBLE; }
constexpr uint8_t type(double) { return RINGTRACE_PF_DOUBLE; }
constexpr uint8_t type(const char *) { return RINGTRACE_PF_STRING; }
constexpr uint8_t type(char *) { return RINGTRACE_PF_STRING; }
template <class T> constexpr uint8_t type(T *) { return RINGTRACE_PF_POINTER; }
inline uint64_t val(bool v) { return v; }
inline uint64_t val(char v) { return (uint64_t)(int64_t)v; }
inline uint64_t val(signed char v) { return (uint64_t)(int64_t)v; }
inline uint64_t val(unsigned char v) { return v; }
inline uint64_t val(short v) { return (uint64_t)(int64_t)v; }
inline uint64_t val(unsigned short v) { return v; }
inline uint64_t val(int v) { return (uint64_t)(int64_t)v; }
inline uint64_t val(unsigned v) { return v; }
inline uint64_t val(long v) { return (uint64_t)(int64_t)v; }
inline uint64_t val(unsigned long v) { return v; }
inline uint64_t val(long long v) { return (uint64_t)v; }
inline uint64_t val(unsigned long long v) { return v; }
inline uint64_t val(float v) { return ringtrace_pf_dbl_(v); }
inline uint64_t val(double v) { return ringtrace_pf_dbl_(v); }
inline uint64_t val(const char *v) { return ringtrace_pf_str_(v); }
inline uint64_t val(char *v) { return ringtrace_pf_str_(v); }
template <class T> inline uint64_t val(T *v) { return ringtrace_pf_ptr_((const void *)v); }
} // namespace ringtrace_pf
#define RINGTRACE__PF_TYPE(x) ::ringtrace_pf::type(::ringtrace_pf::decay_t<decltype(x)>())
#define RINGTRACE__PF_VAL(x) ::ringtrace_pf::val(x)
#else
#define RINGTRACE__PF_TYPE(x)                                                                      \
	_Generic((x), _Bool: RINGTRACE_PF_U64, char: RINGTRACE_PF_S64,                     \
		 signed char: RINGTRACE_PF_S64, unsigned char: RINGTRACE_PF_U64,           \
		 short: RINGTRACE_PF_S64, unsigned short: RINGTRACE_PF_U64,                \
		 int: RINGTRACE_PF_S64, unsigned: RINGTRACE_PF_U64, long: RINGTRACE_PF_S64, \
		 unsigned long: RINGTRACE_PF_U64, long long: RINGTRACE_PF_S64,             \
		 unsigned long long: RINGTRACE_PF_U64, float: RINGTRACE_PF_DOUBLE,         \
		 double: RINGTRACE_PF_DOUBLE, char *: RINGTRACE_PF_STRING,                 \
		 const char *: RINGTRACE_PF_STRING, void *: RINGTRACE_PF_POINTER,          \
		 const void *: RINGTRACE_PF_POINTER, default: RINGTRACE_PF_S64)
#define RINGTRACE__PF_VAL(x)                                                                       \
	_Generic((x), float: ringtrace_pf_dbl_, double: ringtrace_pf_dbl_,                 \
		 char *: ringtrace_pf_str_, const char *: ringtrace_pf_str_,               \
		 void *: ringtrace_pf_ptr_, const void *: ringtrace_pf_ptr_,               \
		 _Bool: ringtrace_pf_u64_, unsigned char: ringtrace_pf_u64_,               \
		 unsigned short: ringtrace_pf_u64_, unsigned: ringtrace_pf_u64_,           \
		 unsigned long: ringtrace_pf_u64_, unsigned long long: ringtrace_pf_u64_,  \
		 default: ringtrace_pf_s64_)(x)
#endif

#define RINGTRACE__PF_NARGS_(fmt, a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#define RINGTRACE__PF_NARGS(...) RINGTRACE__PF_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0)
#define RINGTRACE__PF_CAT_(a, b) a##b
#define RINGTRACE__PF_CAT(a, b) RINGTRACE__PF_CAT_(a, b)

#define RINGTRACE__PF_BODY(fmt, n, types, vals, ...)                                               \
	do {                                                                               \
		if (0)                                                                     \
			ringtrace_printf_check_(__VA_ARGS__);                              \
		if (__builtin_expect(__atomic_load_n(&ringtrace_event_ringtrace_printf.state,   \
						     __ATOMIC_RELAXED),                     \
				     0)) {                                                 \
			static const uint8_t ringtrace__pf_types_[] = {types};                     \
			static struct ringtrace_printf_site ringtrace__pf_site_ = {               \
				fmt, __FILE__, __LINE__, 0, n, 0, ringtrace__pf_types_};           \
			const uint64_t ringtrace__pf_vals_[] = {vals};                             \
			ringtrace_printf_record_(&ringtrace__pf_site_, ringtrace__pf_vals_);               \
		}                                                                          \
	} while (0)

#define RINGTRACE__PF_0(f) RINGTRACE__PF_BODY(f, 0, 0, 0, f)
#define RINGTRACE__PF_1(f, a) RINGTRACE__PF_BODY(f, 1, RINGTRACE__PF_TYPE(a), RINGTRACE__PF_VAL(a), f, a)
/* Argument lists with commas are passed through a helper level. */
#define RINGTRACE__PF_T(...) __VA_ARGS__
#define RINGTRACE__PF_BODYN(f, n, types, vals, ...) RINGTRACE__PF_BODY(f, n, RINGTRACE__PF_T types, RINGTRACE__PF_T vals, __VA_ARGS__)
#define RINGTRACE__PF_2(f, a, b)                                                                   \
	RINGTRACE__PF_BODYN(f, 2, (RINGTRACE__PF_TYPE(a), RINGTRACE__PF_TYPE(b)), (RINGTRACE__PF_VAL(a), RINGTRACE__PF_VAL(b)), f, a, b)
#define RINGTRACE__PF_3(f, a, b, c)                                                                \
	RINGTRACE__PF_BODYN(f, 3, (RINGTRACE__PF_TYPE(a), RINGTRACE__PF_TYPE(b), RINGTRACE__PF_TYPE(c)),                   \
		    (RINGTRACE__PF_VAL(a), RINGTRACE__PF_VAL(b), RINGTRACE__PF_VAL(c)), f, a, b, c)
#define RINGTRACE__PF_4(f, a, b, c, d)                                                             \
	RINGTRACE__PF_BODYN(f, 4, (RINGTRACE__PF_TYPE(a), RINGTRACE__PF_TYPE(b), RINGTRACE__PF_TYPE(c), RINGTRACE__PF_TYPE(d)),    \
		    (RINGTRACE__PF_VAL(a), RINGTRACE__PF_VAL(b), RINGTRACE__PF_VAL(c), RINGTRACE__PF_VAL(d)), f, a, b, c, d)
#define RINGTRACE__PF_5(f, a, b, c, d, e)                                                          \
	RINGTRACE__PF_BODYN(f, 5,                                                                  \
		    (RINGTRACE__PF_TYPE(a), RINGTRACE__PF_TYPE(b), RINGTRACE__PF_TYPE(c), RINGTRACE__PF_TYPE(d), RINGTRACE__PF_TYPE(e)), \
		    (RINGTRACE__PF_VAL(a), RINGTRACE__PF_VAL(b), RINGTRACE__PF_VAL(c), RINGTRACE__PF_VAL(d), RINGTRACE__PF_VAL(e)), f, a, \
		    b, c, d, e)
#define RINGTRACE__PF_6(f, a, b, c, d, e, g)                                                       \
	RINGTRACE__PF_BODYN(f, 6,                                                                  \
		    (RINGTRACE__PF_TYPE(a), RINGTRACE__PF_TYPE(b), RINGTRACE__PF_TYPE(c), RINGTRACE__PF_TYPE(d), RINGTRACE__PF_TYPE(e),  \
		     RINGTRACE__PF_TYPE(g)),                                                       \
		    (RINGTRACE__PF_VAL(a), RINGTRACE__PF_VAL(b), RINGTRACE__PF_VAL(c), RINGTRACE__PF_VAL(d), RINGTRACE__PF_VAL(e),       \
		     RINGTRACE__PF_VAL(g)),                                                        \
		    f, a, b, c, d, e, g)
#define RINGTRACE__PF_7(f, a, b, c, d, e, g, h)                                                    \
	RINGTRACE__PF_BODYN(f, 7,                                                                  \
		    (RINGTRACE__PF_TYPE(a), RINGTRACE__PF_TYPE(b), RINGTRACE__PF_TYPE(c), RINGTRACE__PF_TYPE(d), RINGTRACE__PF_TYPE(e),  \
		     RINGTRACE__PF_TYPE(g), RINGTRACE__PF_TYPE(h)),                                        \
		    (RINGTRACE__PF_VAL(a), RINGTRACE__PF_VAL(b), RINGTRACE__PF_VAL(c), RINGTRACE__PF_VAL(d), RINGTRACE__PF_VAL(e),       \
		     RINGTRACE__PF_VAL(g), RINGTRACE__PF_VAL(h)),                                          \
		    f, a, b, c, d, e, g, h)
#define RINGTRACE__PF_8(f, a, b, c, d, e, g, h, i)                                                 \
	RINGTRACE__PF_BODYN(f, 8,                                                                  \
		    (RINGTRACE__PF_TYPE(a), RINGTRACE__PF_TYPE(b), RINGTRACE__PF_TYPE(c), RINGTRACE__PF_TYPE(d), RINGTRACE__PF_TYPE(e),  \
		     RINGTRACE__PF_TYPE(g), RINGTRACE__PF_TYPE(h), RINGTRACE__PF_TYPE(i)),                         \
		    (RINGTRACE__PF_VAL(a), RINGTRACE__PF_VAL(b), RINGTRACE__PF_VAL(c), RINGTRACE__PF_VAL(d), RINGTRACE__PF_VAL(e),       \
		     RINGTRACE__PF_VAL(g), RINGTRACE__PF_VAL(h), RINGTRACE__PF_VAL(i)),                            \
		    f, a, b, c, d, e, g, h, i)

#define ringtrace_printf(...) RINGTRACE__PF_CAT(RINGTRACE__PF_, RINGTRACE__PF_NARGS(__VA_ARGS__))(__VA_ARGS__)

#endif /* RINGTRACE_PRINTF_H */
