/*
 * ringtrace/static/printf.h - the expansion of ringtrace_printf(): argument
 * types worked out at compile time (_Generic in C, overloads in C++) and
 * the call site's static description.
 *
 * VERSION-LOCKED INLINE CODE, NOT AN API (see ringtrace/static/layout.h).
 * Included by ringtrace/printf.h.
 */
#ifndef RINGTRACE_STATIC_PRINTF_H
#define RINGTRACE_STATIC_PRINTF_H

#include <stddef.h>
#include <stdint.h>

#include "ringtrace/schema.h"
#include "ringtrace/static/event.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ringtrace_printf_site;

/* The pseudo-event that enables ringtrace_printf, with the fixed id 0. */
extern struct ringtrace_event_desc ringtrace_event_ringtrace_printf
	RINGTRACE_LAYOUT_SYM_(ringtrace_event_ringtrace_printf);

/* Record a call (out of line, src/event/printf.c). */
void ringtrace_printf_record_(struct ringtrace_printf_site *site, const uint64_t *vals)
	RINGTRACE_LAYOUT_SYM_(ringtrace_printf_record_);

static inline void ringtrace_printf_check_(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void ringtrace_printf_check_(const char *fmt, ...)
{
	(void)fmt;
}

static inline uint64_t ringtrace_pf_s64_(int64_t v)
{
	return (uint64_t)v;
}
static inline uint64_t ringtrace_pf_u64_(uint64_t v)
{
	return v;
}
static inline uint64_t ringtrace_pf_dbl_(double v)
{
	uint64_t u;
	__builtin_memcpy(&u, &v, 8);
	return u;
}
static inline uint64_t ringtrace_pf_str_(const char *s)
{
	return (uint64_t)(uintptr_t)s;
}
static inline uint64_t ringtrace_pf_ptr_(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

#ifdef __cplusplus
}

#include <type_traits>

namespace ringtrace_pf
{
/* The argument's type, decayed, without evaluating the argument. */
template <class T> using decay_t = typename std::decay<T>::type;
constexpr uint8_t type(bool)
{
	return RINGTRACE_PF_U64;
}
constexpr uint8_t type(char)
{
	return RINGTRACE_PF_S64;
}
constexpr uint8_t type(signed char)
{
	return RINGTRACE_PF_S64;
}
constexpr uint8_t type(unsigned char)
{
	return RINGTRACE_PF_U64;
}
constexpr uint8_t type(short)
{
	return RINGTRACE_PF_S64;
}
constexpr uint8_t type(unsigned short)
{
	return RINGTRACE_PF_U64;
}
constexpr uint8_t type(int)
{
	return RINGTRACE_PF_S64;
}
constexpr uint8_t type(unsigned)
{
	return RINGTRACE_PF_U64;
}
constexpr uint8_t type(long)
{
	return RINGTRACE_PF_S64;
}
constexpr uint8_t type(unsigned long)
{
	return RINGTRACE_PF_U64;
}
constexpr uint8_t type(long long)
{
	return RINGTRACE_PF_S64;
}
constexpr uint8_t type(unsigned long long)
{
	return RINGTRACE_PF_U64;
}
constexpr uint8_t type(float)
{
	return RINGTRACE_PF_DOUBLE;
}
constexpr uint8_t type(double)
{
	return RINGTRACE_PF_DOUBLE;
}
constexpr uint8_t type(const char *)
{
	return RINGTRACE_PF_STRING;
}
constexpr uint8_t type(char *)
{
	return RINGTRACE_PF_STRING;
}
template <class T> constexpr uint8_t type(T *)
{
	return RINGTRACE_PF_POINTER;
}
inline uint64_t val(bool v)
{
	return v;
}
inline uint64_t val(char v)
{
	return (uint64_t)(int64_t)v;
}
inline uint64_t val(signed char v)
{
	return (uint64_t)(int64_t)v;
}
inline uint64_t val(unsigned char v)
{
	return v;
}
inline uint64_t val(short v)
{
	return (uint64_t)(int64_t)v;
}
inline uint64_t val(unsigned short v)
{
	return v;
}
inline uint64_t val(int v)
{
	return (uint64_t)(int64_t)v;
}
inline uint64_t val(unsigned v)
{
	return v;
}
inline uint64_t val(long v)
{
	return (uint64_t)(int64_t)v;
}
inline uint64_t val(unsigned long v)
{
	return v;
}
inline uint64_t val(long long v)
{
	return (uint64_t)v;
}
inline uint64_t val(unsigned long long v)
{
	return v;
}
inline uint64_t val(float v)
{
	return ringtrace_pf_dbl_(v);
}
inline uint64_t val(double v)
{
	return ringtrace_pf_dbl_(v);
}
inline uint64_t val(const char *v)
{
	return ringtrace_pf_str_(v);
}
inline uint64_t val(char *v)
{
	return ringtrace_pf_str_(v);
}
template <class T> inline uint64_t val(T *v)
{
	return ringtrace_pf_ptr_((const void *)v);
}
} // namespace ringtrace_pf
#define RINGTRACE_I_PF_TYPE(x) ::ringtrace_pf::type(::ringtrace_pf::decay_t<decltype(x)>())
#define RINGTRACE_I_PF_VAL(x) ::ringtrace_pf::val(x)
#else
/* (laid out by hand: clang-format cannot lay out _Generic) */
/* clang-format off */
#define RINGTRACE_I_PF_TYPE(x)                                                                 \
	_Generic((x), _Bool: RINGTRACE_PF_U64, char: RINGTRACE_PF_S64,                         \
		 signed char: RINGTRACE_PF_S64, unsigned char: RINGTRACE_PF_U64,               \
		 short: RINGTRACE_PF_S64, unsigned short: RINGTRACE_PF_U64,                    \
		 int: RINGTRACE_PF_S64, unsigned: RINGTRACE_PF_U64, long: RINGTRACE_PF_S64,    \
		 unsigned long: RINGTRACE_PF_U64, long long: RINGTRACE_PF_S64,                 \
		 unsigned long long: RINGTRACE_PF_U64, float: RINGTRACE_PF_DOUBLE,             \
		 double: RINGTRACE_PF_DOUBLE, char *: RINGTRACE_PF_STRING,                     \
		 const char *: RINGTRACE_PF_STRING, void *: RINGTRACE_PF_POINTER,              \
		 const void *: RINGTRACE_PF_POINTER, default: RINGTRACE_PF_S64)
#define RINGTRACE_I_PF_VAL(x)                                                                  \
	_Generic((x), float: ringtrace_pf_dbl_, double: ringtrace_pf_dbl_,                     \
		 char *: ringtrace_pf_str_, const char *: ringtrace_pf_str_,                   \
		 void *: ringtrace_pf_ptr_, const void *: ringtrace_pf_ptr_,                   \
		 _Bool: ringtrace_pf_u64_, unsigned char: ringtrace_pf_u64_,                   \
		 unsigned short: ringtrace_pf_u64_, unsigned: ringtrace_pf_u64_,               \
		 unsigned long: ringtrace_pf_u64_, unsigned long long: ringtrace_pf_u64_,      \
		 default: ringtrace_pf_s64_)(x)
/* clang-format on */
#endif

#define RINGTRACE_I_PF_NARGS_(fmt, a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#define RINGTRACE_I_PF_NARGS(...) RINGTRACE_I_PF_NARGS_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0)
#define RINGTRACE_I_PF_CAT_(a, b) a##b
#define RINGTRACE_I_PF_CAT(a, b) RINGTRACE_I_PF_CAT_(a, b)

#define RINGTRACE_I_PF_BODY(fmt, n, types, vals, ...)                                          \
	do {                                                                                   \
		if (0)                                                                         \
			ringtrace_printf_check_(__VA_ARGS__);                                  \
		if (__builtin_expect(__atomic_load_n(&ringtrace_event_ringtrace_printf.state,  \
						     __ATOMIC_RELAXED),                        \
				     0)) {                                                     \
			static const uint8_t ringtrace_i_pf_types_[] = {types};                \
			static struct ringtrace_printf_site ringtrace_i_pf_site_ = {           \
				fmt,                                                           \
				__FILE__,                                                      \
				__LINE__,                                                      \
				0,                                                             \
				n,                                                             \
				0,                                                             \
				ringtrace_i_pf_types_,                                         \
				&ringtrace_runtime_};                                          \
			const uint64_t ringtrace_i_pf_vals_[] = {vals};                        \
			ringtrace_printf_record_(&ringtrace_i_pf_site_, ringtrace_i_pf_vals_); \
		}                                                                              \
	} while (0)

#define RINGTRACE_I_PF_0(f) RINGTRACE_I_PF_BODY(f, 0, 0, 0, f)
#define RINGTRACE_I_PF_1(f, a) \
	RINGTRACE_I_PF_BODY(f, 1, RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_VAL(a), f, a)
/* Argument lists with commas are passed through a helper level. */
#define RINGTRACE_I_PF_T(...) __VA_ARGS__
#define RINGTRACE_I_PF_BODYN(f, n, types, vals, ...) \
	RINGTRACE_I_PF_BODY(f, n, RINGTRACE_I_PF_T types, RINGTRACE_I_PF_T vals, __VA_ARGS__)
#define RINGTRACE_I_PF_2(f, a, b)                                                    \
	RINGTRACE_I_PF_BODYN(f, 2, (RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_TYPE(b)), \
			     (RINGTRACE_I_PF_VAL(a), RINGTRACE_I_PF_VAL(b)), f, a, b)
#define RINGTRACE_I_PF_3(f, a, b, c)                                                            \
	RINGTRACE_I_PF_BODYN(                                                                   \
		f, 3, (RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_TYPE(b), RINGTRACE_I_PF_TYPE(c)), \
		(RINGTRACE_I_PF_VAL(a), RINGTRACE_I_PF_VAL(b), RINGTRACE_I_PF_VAL(c)), f, a, b, c)
#define RINGTRACE_I_PF_4(f, a, b, c, d)                                                            \
	RINGTRACE_I_PF_BODYN(f, 4,                                                                 \
			     (RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_TYPE(b),                      \
			      RINGTRACE_I_PF_TYPE(c), RINGTRACE_I_PF_TYPE(d)),                     \
			     (RINGTRACE_I_PF_VAL(a), RINGTRACE_I_PF_VAL(b), RINGTRACE_I_PF_VAL(c), \
			      RINGTRACE_I_PF_VAL(d)),                                              \
			     f, a, b, c, d)
#define RINGTRACE_I_PF_5(f, a, b, c, d, e)                                                         \
	RINGTRACE_I_PF_BODYN(f, 5,                                                                 \
			     (RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_TYPE(b),                      \
			      RINGTRACE_I_PF_TYPE(c), RINGTRACE_I_PF_TYPE(d),                      \
			      RINGTRACE_I_PF_TYPE(e)),                                             \
			     (RINGTRACE_I_PF_VAL(a), RINGTRACE_I_PF_VAL(b), RINGTRACE_I_PF_VAL(c), \
			      RINGTRACE_I_PF_VAL(d), RINGTRACE_I_PF_VAL(e)),                       \
			     f, a, b, c, d, e)
#define RINGTRACE_I_PF_6(f, a, b, c, d, e, g)                                             \
	RINGTRACE_I_PF_BODYN(                                                             \
		f, 6,                                                                     \
		(RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_TYPE(b), RINGTRACE_I_PF_TYPE(c),  \
		 RINGTRACE_I_PF_TYPE(d), RINGTRACE_I_PF_TYPE(e), RINGTRACE_I_PF_TYPE(g)), \
		(RINGTRACE_I_PF_VAL(a), RINGTRACE_I_PF_VAL(b), RINGTRACE_I_PF_VAL(c),     \
		 RINGTRACE_I_PF_VAL(d), RINGTRACE_I_PF_VAL(e), RINGTRACE_I_PF_VAL(g)),    \
		f, a, b, c, d, e, g)
#define RINGTRACE_I_PF_7(f, a, b, c, d, e, g, h)                                                   \
	RINGTRACE_I_PF_BODYN(f, 7,                                                                 \
			     (RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_TYPE(b),                      \
			      RINGTRACE_I_PF_TYPE(c), RINGTRACE_I_PF_TYPE(d),                      \
			      RINGTRACE_I_PF_TYPE(e), RINGTRACE_I_PF_TYPE(g),                      \
			      RINGTRACE_I_PF_TYPE(h)),                                             \
			     (RINGTRACE_I_PF_VAL(a), RINGTRACE_I_PF_VAL(b), RINGTRACE_I_PF_VAL(c), \
			      RINGTRACE_I_PF_VAL(d), RINGTRACE_I_PF_VAL(e), RINGTRACE_I_PF_VAL(g), \
			      RINGTRACE_I_PF_VAL(h)),                                              \
			     f, a, b, c, d, e, g, h)
#define RINGTRACE_I_PF_8(f, a, b, c, d, e, g, h, i)                                                \
	RINGTRACE_I_PF_BODYN(f, 8,                                                                 \
			     (RINGTRACE_I_PF_TYPE(a), RINGTRACE_I_PF_TYPE(b),                      \
			      RINGTRACE_I_PF_TYPE(c), RINGTRACE_I_PF_TYPE(d),                      \
			      RINGTRACE_I_PF_TYPE(e), RINGTRACE_I_PF_TYPE(g),                      \
			      RINGTRACE_I_PF_TYPE(h), RINGTRACE_I_PF_TYPE(i)),                     \
			     (RINGTRACE_I_PF_VAL(a), RINGTRACE_I_PF_VAL(b), RINGTRACE_I_PF_VAL(c), \
			      RINGTRACE_I_PF_VAL(d), RINGTRACE_I_PF_VAL(e), RINGTRACE_I_PF_VAL(g), \
			      RINGTRACE_I_PF_VAL(h), RINGTRACE_I_PF_VAL(i)),                       \
			     f, a, b, c, d, e, g, h, i)

#endif /* RINGTRACE_STATIC_PRINTF_H */
