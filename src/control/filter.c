/*
 * Filter expressions: a recursive-descent parser that emits a branch
 * program, and its interpreter.
 *
 * The program is a sequence of predicates, each with two successors: the
 * predicate to test next if it holds and if it does not, or a verdict
 * (accept, reject). && and || are compiled into those successors as the
 * parser goes (the exits of an operand that are still open are threaded
 * through the successor slots themselves and patched when the operand
 * after them is known); ! swaps an operand's exits. So evaluation tests
 * each predicate on its path once, jumps straight to the next one, needs
 * no register but the current predicate, and stops at a verdict. Every
 * successor lies after its predicate: a program always ends.
 *
 * Each predicate carries its field's offset when that offset is the same
 * in every record (no string or byte sequence before the field);
 * otherwise the interpreter walks the variable-length fields from the end
 * of the fixed prefix. Integer tests are compiled into one form, a range
 * of the masked value, chosen with the load (size and signedness) when
 * the filter is compiled.
 *
 * The record is untrusted. match() first requires the whole fixed-size
 * prefix of the schema (one compare, after which every fixed-offset load
 * is in bounds - the compiler checked each predicate's field ends inside
 * it); variable-offset fields are checked as they are walked. A damaged
 * record rejects the whole expression rather than one predicate, so that
 * `!(x == 1)` cannot accept a record whose x could not be read.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_internal.h"
#include "schema/schema_api.h"

/* What the parser emits. */
enum rt_fcode {
	RT_F_INT,   /* signed integer compare */
	RT_F_UINT,  /* unsigned integer compare */
	RT_F_FLOAT, /* double compare */
	RT_F_BITS,  /* (value & mask) != 0 */
	RT_F_STR,   /* string ==, != */
	RT_F_GLOB,  /* string ~ */
	RT_F_BYTES, /* byte sequence ==, != */
};

/*
 * How a predicate is run (chosen when the filter is compiled). The
 * integer ones load the field sign-extended (S) or zero-extended (U) to 64
 * bits and test ((v & mask) - lo) <= span: every comparison and `&` is a
 * range of the wrapped difference (as ringtrace_fast_pred_ does).
 */
enum rt_fexec {
	RT_X_S1,
	RT_X_S2,
	RT_X_S4,
	RT_X_S8,
	RT_X_U1,
	RT_X_U2,
	RT_X_U4,
	RT_X_F4,
	RT_X_F8,
	RT_X_STR,     /* string ==, != (also a glob with no special character) */
	RT_X_PREFIX,  /* glob "literal*" on an ASCII string */
	RT_X_GLOB_QS, /* glob of literals, '*' and '?' on an ASCII string */
	RT_X_GLOB,    /* any other glob: fnmatch */
	RT_X_BYTES,
};

enum rt_fcmp { RT_C_EQ, RT_C_NE, RT_C_LT, RT_C_LE, RT_C_GT, RT_C_GE };

#define RT_VAR_OFF UINT32_MAX
/* Verdicts, as successors: odd accepts. Every predicate's index is below. */
#define RT_FACCEPT UINT32_MAX
#define RT_FREJECT (UINT32_MAX - 1)
/* The end of a list of open exits (below). */
#define RT_FNIL UINT32_MAX

struct rt_finsn {
	uint8_t code; /* enum rt_fcode */
	uint8_t cmp;  /* enum rt_fcmp; STR/BYTES: EQ or NE */
	uint8_t size; /* scalar size */
	uint8_t is_signed;
	uint8_t x;   /* enum rt_fexec */
	uint8_t neg; /* STR, glob, BYTES: the test is != (the result inverted) */
	uint8_t pad[2];
	uint32_t field;   /* index in the schema */
	uint32_t off;     /* fixed offset, or RT_VAR_OFF */
	uint32_t next[2]; /* the successor if the test fails [0], holds [1] */
	uint32_t arg;     /* literal offset in the pool */
	uint32_t arglen;  /* literal length (a prefix glob: the prefix's) */
	union {
		int64_t i;
		uint64_t u;
		double d;
	} v;
	uint64_t mask, lo, span; /* the integer forms (rt_fexec) */
	/* The integer test in the tracepoint's inline form (rg.off is 0: the
	 * field is at p + off); rg.op is 0 when it has none. */
	struct ringtrace_fast_pred_ rg;
};

/* What the interpreter needs of each field to walk a record. */
struct rt_flayout {
	uint8_t type;
	uint8_t size;
	uint8_t align;
	uint8_t pad;
	uint32_t bytes; /* fixed size (scalars, arrays) */
};

struct ringtrace_filter {
	uint32_t ninsn;
	uint32_t min_len;   /* the schema's fixed-size prefix */
	uint32_t var_field; /* first variable-length field (nfields if none) */
	uint32_t nfields;
	uint32_t fixed; /* only scalar tests at fixed offsets: rt_fmatch_fixed */
	/* Integer and float tests at fixed offsets only, as up to 253 ranges:
	 * the program in the tracepoint's inline form (RINGTRACE_FP_PROG), of
	 * niprog ranges; else NULL. */
	struct ringtrace_fast_pred_ *iprog;
	uint32_t niprog;
	const struct rt_flayout *layout;
	const char *pool; /* NUL-terminated literals */
	struct rt_finsn insn[];
};

/* ---- evaluation ------------------------------------------------------------ */

#define RT_FCMP(cmp, a, b)               \
	((cmp) == RT_C_EQ   ? (a) == (b) \
	 : (cmp) == RT_C_NE ? (a) != (b) \
	 : (cmp) == RT_C_LT ? (a) < (b)  \
	 : (cmp) == RT_C_LE ? (a) <= (b) \
	 : (cmp) == RT_C_GT ? (a) > (b)  \
			    : (a) >= (b))

/*
 * Offset of field `target` (at or after the first variable-length field)
 * in this record, or SIZE_MAX if the record ends or is damaged before it.
 * The returned offset is <= len; the caller checks the field's own extent.
 */
static size_t rt_fwalk(const struct ringtrace_filter *f, uint32_t target, const char *p, size_t len)
{
	size_t o = f->min_len;
	for (uint32_t i = f->var_field;; i++) {
		const struct rt_flayout *l = &f->layout[i];
		o = (o + l->align - 1) & ~(size_t)(l->align - 1);
		if (o > len)
			return SIZE_MAX;
		if (i == target)
			return o;
		if (l->type == RINGTRACE_FT_STRING) {
			if (o == len)
				return SIZE_MAX;
			const char *nul = memchr(p + o, 0, len - o);
			if (!nul)
				return SIZE_MAX;
			o = (size_t)(nul - p) + 1;
		} else if (l->type == RINGTRACE_FT_BYTES) {
			uint32_t n;
			if (len - o < 4)
				return SIZE_MAX;
			memcpy(&n, p + o, 4);
			if (n > len - o - 4)
				return SIZE_MAX;
			o += 4 + (size_t)n;
		} else {
			if (len - o < l->bytes)
				return SIZE_MAX;
			o += l->bytes;
		}
	}
}

/* A scalar test (RT_X_S1 .. RT_X_F8) on the field at q. */
static inline __attribute__((always_inline)) int rt_fscalar(const struct rt_finsn *in,
							    const char *q)
{
	uint64_t v;
	switch (in->x) {
	case RT_X_S1: {
		int8_t x;
		memcpy(&x, q, 1);
		v = (uint64_t)(int64_t)x;
		break;
	}
	case RT_X_S2: {
		int16_t x;
		memcpy(&x, q, 2);
		v = (uint64_t)(int64_t)x;
		break;
	}
	case RT_X_S4: {
		int32_t x;
		memcpy(&x, q, 4);
		v = (uint64_t)(int64_t)x;
		break;
	}
	case RT_X_S8:
		memcpy(&v, q, 8);
		break;
	case RT_X_U1: {
		uint8_t x;
		memcpy(&x, q, 1);
		v = x;
		break;
	}
	case RT_X_U2: {
		uint16_t x;
		memcpy(&x, q, 2);
		v = x;
		break;
	}
	case RT_X_U4: {
		uint32_t x;
		memcpy(&x, q, 4);
		v = x;
		break;
	}
	case RT_X_F4: {
		float x;
		memcpy(&x, q, 4);
		return RT_FCMP(in->cmp, (double)x, in->v.d);
	}
	default: {
		double x;
		memcpy(&x, q, 8);
		return RT_FCMP(in->cmp, x, in->v.d);
	}
	}
	return ((v & in->mask) - in->lo) <= in->span;
}

/*
 * A program of scalar tests on fixed-offset fields only (f->fixed; the
 * record holds the fixed prefix): no field to find, no call, so no
 * register to save; each step tests one predicate and takes its successor.
 */
static __attribute__((noinline)) int rt_fmatch_fixed(const ringtrace_filter *f, const char *p)
{
	const struct rt_finsn *in = f->insn;
	for (;;) {
		uint32_t nx = in->next[rt_fscalar(in, p + in->off)];
		if (nx >= RT_FREJECT)
			return (int)(nx & 1);
		in = f->insn + nx;
	}
}

/* Whether n bytes of a and b are equal (short literals: no call). */
static inline int rt_fsame(const char *a, const char *b, size_t n)
{
	if (n > 16)
		return memcmp(a, b, n) == 0;
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/*
 * The length of the string at s, looking at most `max` bytes, or SIZE_MAX
 * if there is no NUL among them; *high gets the OR of its bytes (bit 7
 * set: not ASCII). (Strings in records are short: a loop, no call.)
 */
static inline size_t rt_fstrlen(const char *s, size_t max, unsigned *high)
{
	unsigned h = 0;
	size_t n = 0;
	for (; n < max && s[n]; n++)
		h |= (unsigned char)s[n];
	*high = h;
	return n < max ? n : SIZE_MAX;
}

/*
 * A glob of literal characters, '*' and '?' (no '[' or '\\') on a string
 * of ASCII characters, where fnmatch(pat, s, 0) compares characters as
 * bytes in every locale: the usual matcher that returns to the last '*'
 * with one more character for it when a literal does not match.
 */
static int rt_fglob_qs(const char *pat, size_t plen, const char *s, size_t n)
{
	size_t pi = 0, si = 0, star = SIZE_MAX, mark = 0;
	while (si < n) {
		if (pi < plen && pat[pi] == '*') {
			star = pi++;
			mark = si;
		} else if (pi < plen && (pat[pi] == '?' || pat[pi] == s[si])) {
			pi++;
			si++;
		} else if (star != SIZE_MAX) {
			pi = star + 1;
			si = ++mark;
		} else {
			return 0;
		}
	}
	while (pi < plen && pat[pi] == '*')
		pi++;
	return pi == plen;
}

/* A string test (RT_X_STR .. RT_X_GLOB) on the string at s, which has n
 * bytes before its NUL, all ASCII or not. */
static int rt_ftext(const struct ringtrace_filter *f, const struct rt_finsn *in, const char *s,
		    size_t n, int ascii)
{
	const char *lit = f->pool + in->arg;
	int m;
	switch (in->x) {
	case RT_X_STR:
		m = n == in->arglen && rt_fsame(s, lit, n);
		break;
	case RT_X_PREFIX:
		/* A string that does not start with the prefix's bytes does not
		 * start with its characters in any locale; one that does but has
		 * other bytes than ASCII goes to fnmatch, which in a multibyte
		 * locale may refuse the string as a whole. */
		m = n >= in->arglen && rt_fsame(s, lit, in->arglen) &&
		    (ascii || fnmatch(lit, s, 0) == 0);
		break;
	case RT_X_GLOB_QS:
		m = ascii ? rt_fglob_qs(lit, in->arglen, s, n) : fnmatch(lit, s, 0) == 0;
		break;
	default:
		m = fnmatch(lit, s, 0) == 0;
		break;
	}
	return m ^ in->neg;
}

/* Any program: fields found as the record says, strings compared. */
static __attribute__((noinline)) int rt_fmatch_general(const ringtrace_filter *f, const char *p,
						       size_t len)
{
	const struct rt_finsn *in = f->insn;
	for (;;) {
		size_t o = in->off;
		int m;
		if (o == RT_VAR_OFF) {
			o = rt_fwalk(f, in->field, p, len);
			if (o == SIZE_MAX)
				return 0;
		}
		if (in->x <= RT_X_F8) {
			if (len - o < in->size)
				return 0;
			m = rt_fscalar(in, p + o);
		} else if (in->x == RT_X_BYTES) {
			uint32_t n;
			if (len - o < 4)
				return 0;
			memcpy(&n, p + o, 4);
			if (n > len - o - 4)
				return 0;
			m = (n == in->arglen && memcmp(p + o + 4, f->pool + in->arg, n) == 0) ^
			    in->neg;
		} else {
			unsigned high;
			size_t n = rt_fstrlen(p + o, len - o, &high);
			if (n == SIZE_MAX)
				return 0;
			m = rt_ftext(f, in, p + o, n, high < 0x80);
		}
		uint32_t nx = in->next[m];
		if (nx >= RT_FREJECT)
			return (int)(nx & 1);
		in = f->insn + nx;
	}
}

int ringtrace_filter_match(const ringtrace_filter *f, const void *payload, size_t len)
{
	if (rt_unlikely(len < f->min_len))
		return 0;
	return f->fixed ? rt_fmatch_fixed(f, payload) : rt_fmatch_general(f, payload, len);
}

void ringtrace_filter_free(ringtrace_filter *f)
{
	free(f);
}

/* ---- lexer ------------------------------------------------------------------- */

enum rt_tok {
	T_END,
	T_IDENT,
	T_NUM,
	T_STR,
	T_EQ,
	T_NE,
	T_LT,
	T_LE,
	T_GT,
	T_GE,
	T_BAND,
	T_GLOB,
	T_AND,
	T_OR,
	T_NOT,
	T_LP,
	T_RP,
	T_ERR,
};

static const char *const rt_tok_text[] = {
	[T_END] = "end of expression",
	[T_IDENT] = "field",
	[T_NUM] = "number",
	[T_STR] = "string",
	[T_EQ] = "==",
	[T_NE] = "!=",
	[T_LT] = "<",
	[T_LE] = "<=",
	[T_GT] = ">",
	[T_GE] = ">=",
	[T_BAND] = "&",
	[T_GLOB] = "~",
	[T_AND] = "&&",
	[T_OR] = "||",
	[T_NOT] = "!",
	[T_LP] = "(",
	[T_RP] = ")",
	[T_ERR] = "?",
};

/* Deeper nesting of ( and ! is refused, bounding the parser's recursion. */
#define RT_FMAX_DEPTH 200

struct rt_fparser {
	const char *s;
	size_t n;
	const struct ringtrace_field_desc *fields;
	uint32_t nfields;
	/* current token */
	int tok;
	size_t pos, len;
	int depth;
	/* the program being built */
	struct rt_finsn *insn;
	uint32_t ninsn, cap;
	char *pool;
	size_t npool, pcap;
	/* the first error */
	int err;
	unsigned col;
};

static int rt_ferr(struct rt_fparser *P, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int rt_ferr(struct rt_fparser *P, size_t pos, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	P->col = (unsigned)pos + 1;
	P->err = rt_error(RINGTRACE_EINVAL, "filter: %s at column %u", msg, P->col);
	return -1;
}

static int rt_fnomem(struct rt_fparser *P)
{
	P->col = 0;
	P->err = rt_error(RINGTRACE_ENOMEM, "filter: out of memory");
	return -1;
}

static int rt_isident0(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int rt_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

static int rt_isident(char c)
{
	return rt_isident0(c) || rt_isdigit(c);
}

/* Read the next token into P->tok/pos/len; -1 (error set) on a bad one. */
static int rt_fnext(struct rt_fparser *P)
{
	const char *s = P->s;
	size_t i = P->pos + P->len;
	while (i < P->n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	P->pos = i;
	P->len = 1;
	if (i >= P->n) {
		P->tok = T_END;
		P->len = 0;
		return 0;
	}
	char c = s[i], d = i + 1 < P->n ? s[i + 1] : 0;
	if (rt_isident0(c)) {
		size_t j = i;
		while (j < P->n && rt_isident(s[j]))
			j++;
		P->tok = T_IDENT;
		P->len = j - i;
		return 0;
	}
	if (rt_isdigit(c) || ((c == '-' || c == '.') && (rt_isdigit(d) || d == '.'))) {
		/* Take everything a number could be made of; rt_fnumber() then
		 * decides whether it is one ("12ab" is malformed, not 12 then ab). */
		size_t j = i + 1;
		int hex = c == '0' && (d == 'x' || d == 'X');
		while (j < P->n) {
			char e = s[j];
			if (rt_isident(e) || e == '.' ||
			    ((e == '+' || e == '-') && !hex &&
			     (s[j - 1] == 'e' || s[j - 1] == 'E')))
				j++;
			else
				break;
		}
		P->tok = T_NUM;
		P->len = j - i;
		return 0;
	}
	if (c == '"') {
		size_t j = i + 1;
		while (j < P->n && s[j] != '"') {
			if (s[j] == '\\' && j + 1 < P->n)
				j++;
			j++;
		}
		if (j >= P->n)
			return rt_ferr(P, i, "unterminated string (missing closing '\"')");
		P->tok = T_STR;
		P->len = j + 1 - i;
		return 0;
	}
	switch (c) {
	case '=':
		if (d == '=') {
			P->tok = T_EQ;
			P->len = 2;
			return 0;
		}
		return rt_ferr(P, i, "unknown operator '=' (use '==')");
	case '!':
		if (d == '=') {
			P->tok = T_NE;
			P->len = 2;
			return 0;
		}
		P->tok = T_NOT;
		return 0;
	case '<':
		if (d == '=') {
			P->tok = T_LE;
			P->len = 2;
			return 0;
		}
		P->tok = T_LT;
		return 0;
	case '>':
		if (d == '=') {
			P->tok = T_GE;
			P->len = 2;
			return 0;
		}
		P->tok = T_GT;
		return 0;
	case '&':
		if (d == '&') {
			P->tok = T_AND;
			P->len = 2;
			return 0;
		}
		P->tok = T_BAND;
		return 0;
	case '|':
		if (d == '|') {
			P->tok = T_OR;
			P->len = 2;
			return 0;
		}
		return rt_ferr(P, i, "unknown operator '|' (use '||')");
	case '~':
		P->tok = T_GLOB;
		return 0;
	case '(':
		P->tok = T_LP;
		return 0;
	case ')':
		P->tok = T_RP;
		return 0;
	}
	if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
		return rt_ferr(P, i, "unexpected character '%c'", c);
	return rt_ferr(P, i, "unexpected byte 0x%02x", (unsigned char)c);
}

/* The current token, for messages: its text (at most 32 bytes). */
#define RT_TOKFMT "'%.*s'"
#define RT_TOKARG(P) (int)((P)->len > 32 ? 32 : (P)->len), (P)->s + (P)->pos

/* ---- code generation ----------------------------------------------------------- */

static struct rt_finsn *rt_femit(struct rt_fparser *P, int code)
{
	if (P->ninsn == P->cap) {
		uint32_t cap = P->cap ? P->cap * 2 : 16;
		struct rt_finsn *n = realloc(P->insn, cap * sizeof(*n));
		if (!n) {
			rt_fnomem(P);
			return NULL;
		}
		P->insn = n;
		P->cap = cap;
	}
	struct rt_finsn *in = &P->insn[P->ninsn++];
	memset(in, 0, sizeof(*in));
	in->code = (uint8_t)code;
	return in;
}

/* Decode the quoted literal of the current token into the pool. */
static int rt_fstring(struct rt_fparser *P, uint32_t *off, uint32_t *len)
{
	size_t need = P->len; /* the decoded text and its NUL fit in the token's length */
	if (P->npool + need > P->pcap) {
		size_t cap = P->pcap ? P->pcap : 64;
		while (cap < P->npool + need)
			cap *= 2;
		char *n = realloc(P->pool, cap);
		if (!n)
			return rt_fnomem(P);
		P->pool = n;
		P->pcap = cap;
	}
	if (P->npool + need > UINT32_MAX)
		return rt_ferr(P, P->pos, "string literal too long");
	char *d = P->pool + P->npool;
	const char *s = P->s + P->pos + 1, *e = P->s + P->pos + P->len - 1;
	size_t k = 0;
	while (s < e) {
		/* \" and \\ are escapes; any other backslash stays, for fnmatch. */
		if (s[0] == '\\' && s + 1 < e && (s[1] == '"' || s[1] == '\\'))
			s++;
		d[k++] = *s++;
	}
	d[k] = 0;
	*off = (uint32_t)P->npool;
	*len = (uint32_t)k;
	P->npool += k + 1;
	return 0;
}

struct rt_fnum {
	int is_float;
	int negative;
	uint64_t mag; /* integers: the magnitude */
	double d;     /* floats, and integers as double */
};

/* Parse the current T_NUM token: decimal or 0x integer, or a decimal float. */
static int rt_fnumber(struct rt_fparser *P, struct rt_fnum *out)
{
	char buf[80];
	const char *t = P->s + P->pos;
	size_t n = P->len;
	if (n >= sizeof(buf))
		return rt_ferr(P, P->pos, "malformed number " RT_TOKFMT " (too long)",
			       RT_TOKARG(P));
	memcpy(buf, t, n);
	buf[n] = 0;
	memset(out, 0, sizeof(*out));
	const char *b = buf;
	if (*b == '-') {
		out->negative = 1;
		b++;
	}
	int hex = b[0] == '0' && (b[1] == 'x' || b[1] == 'X');
	int is_float = !hex && strpbrk(b, ".eE") != NULL;
	char *end;
	errno = 0;
	if (is_float) {
		/* strtod would also take "inf", "nan" and hex floats; the lexer only
		 * lets digits, '.', letters and exponent signs through, so check
		 * the shape: digits and one '.', then an optional exponent. */
		const char *q = b;
		int digits = 0;
		while (rt_isdigit(*q)) {
			q++;
			digits++;
		}
		if (*q == '.') {
			q++;
			while (rt_isdigit(*q)) {
				q++;
				digits++;
			}
		}
		if (*q == 'e' || *q == 'E') {
			q++;
			if (*q == '+' || *q == '-')
				q++;
			if (!rt_isdigit(*q))
				digits = 0;
			while (rt_isdigit(*q))
				q++;
		}
		if (!digits || *q)
			return rt_ferr(P, P->pos, "malformed number " RT_TOKFMT, RT_TOKARG(P));
		out->d = strtod(buf, &end);
		if (*end || errno == ERANGE)
			return rt_ferr(P, P->pos, "number " RT_TOKFMT " is out of range",
				       RT_TOKARG(P));
		out->is_float = 1;
		return 0;
	}
	const char *digits = hex ? b + 2 : b;
	for (const char *q = digits; *q; q++) {
		int ok = rt_isdigit(*q) ||
			 (hex && ((*q >= 'a' && *q <= 'f') || (*q >= 'A' && *q <= 'F')));
		if (!ok)
			return rt_ferr(P, P->pos, "malformed number " RT_TOKFMT, RT_TOKARG(P));
	}
	if (!*digits)
		return rt_ferr(P, P->pos, "malformed number " RT_TOKFMT, RT_TOKARG(P));
	out->mag = strtoull(digits, &end, hex ? 16 : 10);
	if (*end || errno == ERANGE)
		return rt_ferr(P, P->pos, "number " RT_TOKFMT " is out of range", RT_TOKARG(P));
	if (out->negative && out->mag > (uint64_t)1 << 63)
		return rt_ferr(P, P->pos, "number " RT_TOKFMT " is out of range", RT_TOKARG(P));
	out->d = out->negative ? -(double)out->mag : (double)out->mag;
	return 0;
}

/* A predicate being compiled: its field, its operator and the columns of
 * the three, for the messages. */
struct rt_fpred_at {
	uint32_t fi;
	const struct ringtrace_field_desc *fd;
	const char *fname; /* in the expression, not NUL-terminated */
	int fl;            /* its length, at most 64 for the messages */
	size_t fpos, opos, vpos;
	int op; /* T_EQ .. T_GLOB */
	const char *optext;
	const char *tn; /* the field's type name */
};

/* The field: the current token, a name of the schema. */
static int rt_fpred_field(struct rt_fparser *P, struct rt_fpred_at *q)
{
	size_t flen = P->len;
	q->fpos = P->pos;
	q->fl = (int)(flen > 64 ? 64 : flen);
	q->fname = P->s + q->fpos;
	for (q->fi = 0; q->fi < P->nfields; q->fi++) {
		const char *nm = P->fields[q->fi].name;
		if (nm && strlen(nm) == flen && memcmp(nm, q->fname, flen) == 0)
			break;
	}
	if (q->fi == P->nfields)
		return rt_ferr(P, q->fpos, "unknown field \"%.*s\"", q->fl, q->fname);
	q->fd = &P->fields[q->fi];
	q->tn = rt_field_type_name(q->fd);
	return 0;
}

/* The operator and the value after the field: the value (a number or a
 * quoted string) is the current token on return. */
static int rt_fpred_op(struct rt_fparser *P, struct rt_fpred_at *q)
{
	if (rt_fnext(P))
		return -1;
	q->op = P->tok;
	q->opos = P->pos;
	if (q->op < T_EQ || q->op > T_GLOB) {
		if (q->op == T_END)
			return rt_ferr(P, q->opos, "missing operator after field \"%.*s\"", q->fl,
				       q->fname);
		return rt_ferr(P, q->opos,
			       "missing operator after field \"%.*s\" (found " RT_TOKFMT ")", q->fl,
			       q->fname, RT_TOKARG(P));
	}
	q->optext = rt_tok_text[q->op];
	if (rt_fnext(P))
		return -1;
	if (P->tok != T_NUM && P->tok != T_STR) {
		if (P->tok == T_END)
			return rt_ferr(P, P->pos, "missing value after '%s'", q->optext);
		return rt_ferr(P, P->pos, "missing value after '%s' (found " RT_TOKFMT ")",
			       q->optext, RT_TOKARG(P));
	}
	q->vpos = P->pos;
	return 0;
}

/* A string or byte-sequence field: ==, != (and ~ for strings) against a
 * quoted literal. */
static int rt_fpred_text(struct rt_fparser *P, const struct rt_fpred_at *q)
{
	int is_str = q->fd->type == RINGTRACE_FT_STRING, op = q->op;
	if (op != T_EQ && op != T_NE && !(is_str && op == T_GLOB))
		return rt_ferr(P, q->opos, "type mismatch: %s field \"%.*s\" takes %s, not '%s'",
			       q->tn, q->fl, q->fname,
			       is_str ? "==, != or ~" : "== or !=", q->optext);
	if (P->tok != T_STR)
		return rt_ferr(
			P, q->vpos,
			"type mismatch: %s field \"%.*s\" is compared with a quoted string, not a number",
			q->tn, q->fl, q->fname);
	uint32_t so, sl;
	if (rt_fstring(P, &so, &sl))
		return -1;
	struct rt_finsn *in = rt_femit(P, !is_str        ? RT_F_BYTES
					  : op == T_GLOB ? RT_F_GLOB
							 : RT_F_STR);
	if (!in)
		return -1;
	in->cmp = (uint8_t)(op == T_NE ? RT_C_NE : RT_C_EQ);
	in->arg = so;
	in->arglen = sl;
	return 0;
}

/* An enum field against one of its names, in quotes: the name's value is
 * compared, and the name is not kept. Fills in the predicate just emitted. */
static int rt_fpred_enum_name(struct rt_fparser *P, const struct rt_fpred_at *q, int sgn)
{
	if (q->fd->type != RINGTRACE_FT_ENUM)
		return rt_ferr(
			P, q->vpos,
			"type mismatch: %s field \"%.*s\" is compared with a number, not a quoted string",
			q->tn, q->fl, q->fname);
	if (q->op != T_EQ && q->op != T_NE)
		return rt_ferr(P, q->opos,
			       "type mismatch: enum names compare only with == and !=, not '%s'",
			       q->optext);
	uint32_t so, sl;
	size_t mark = P->npool;
	if (rt_fstring(P, &so, &sl))
		return -1;
	const char *name = P->pool + so;
	const struct ringtrace_enum_desc *ed = q->fd->enm;
	uint32_t k = 0;
	for (; ed && k < ed->count; k++)
		if (ed->values[k].name && strcmp(ed->values[k].name, name) == 0)
			break;
	if (!ed || k == ed->count)
		return rt_ferr(P, q->vpos, "unknown enum name \"%.*s\" for field \"%.*s\"",
			       (int)(sl > 64 ? 64 : sl), name, q->fl, q->fname);
	P->npool = mark; /* the name is not needed at run time */
	struct rt_finsn *in = &P->insn[P->ninsn - 1];
	in->v.i = ed->values[k].value;
	in->code = sgn ? RT_F_INT : RT_F_UINT;
	return 0;
}

/* A number field against a number literal, which must fit the field's
 * kind (float, signed, unsigned; any integer for '&'). Fills in the
 * predicate just emitted. */
static int rt_fpred_number(struct rt_fparser *P, const struct rt_fpred_at *q, int sgn)
{
	struct rt_fnum num;
	if (rt_fnumber(P, &num))
		return -1;
	struct rt_finsn *in = &P->insn[P->ninsn - 1];
	if (q->fd->type == RINGTRACE_FT_FLOAT) {
		in->code = RT_F_FLOAT;
		/* A float field holds the literal rounded to float. */
		in->v.d = q->fd->size == 4 ? (double)(float)num.d : num.d;
	} else if (num.is_float) {
		return rt_ferr(P, q->vpos,
			       "type mismatch: float literal " RT_TOKFMT " for %s field \"%.*s\"",
			       RT_TOKARG(P), q->tn, q->fl, q->fname);
	} else if (q->op == T_BAND) {
		in->code = RT_F_BITS;
		in->is_signed = (uint8_t)sgn;
		in->v.u = num.negative ? (uint64_t)0 - num.mag : num.mag;
	} else if (sgn) {
		if (!num.negative && num.mag > INT64_MAX)
			return rt_ferr(P, q->vpos,
				       "number " RT_TOKFMT
				       " is out of range for signed field \"%.*s\"",
				       RT_TOKARG(P), q->fl, q->fname);
		in->code = RT_F_INT;
		in->v.u = num.negative ? (uint64_t)0 - num.mag : num.mag;
	} else {
		if (num.negative && num.mag)
			return rt_ferr(P, q->vpos,
				       "type mismatch: negative number " RT_TOKFMT
				       " for %s field \"%.*s\"",
				       RT_TOKARG(P), q->tn, q->fl, q->fname);
		in->code = RT_F_UINT;
		in->v.u = num.mag;
	}
	return 0;
}

/* A scalar field (integer, float, bool, pointer, enum): the comparisons,
 * and '&' on integers. */
static int rt_fpred_scalar(struct rt_fparser *P, const struct rt_fpred_at *q)
{
	const struct ringtrace_field_desc *fd = q->fd;
	int op = q->op, is_float = fd->type == RINGTRACE_FT_FLOAT;
	if (op == T_GLOB)
		return rt_ferr(
			P, q->opos,
			"type mismatch: glob '~' needs a string field; \"%.*s\" is of type %s",
			q->fl, q->fname, q->tn);
	if (op == T_BAND && is_float)
		return rt_ferr(P, q->opos,
			       "type mismatch: '&' needs an integer field; \"%.*s\" is a float",
			       q->fl, q->fname);
	struct rt_finsn *in = rt_femit(P, RT_F_INT);
	if (!in)
		return -1;
	in->cmp = (uint8_t)(op == T_EQ   ? RT_C_EQ
			    : op == T_NE ? RT_C_NE
			    : op == T_LT ? RT_C_LT
			    : op == T_LE ? RT_C_LE
			    : op == T_GT ? RT_C_GT
					 : RT_C_GE);
	int sgn = fd->is_signed && !is_float && fd->type != RINGTRACE_FT_BOOL &&
		  fd->type != RINGTRACE_FT_POINTER;
	if (P->tok == T_STR)
		return rt_fpred_enum_name(P, q, sgn);
	return rt_fpred_number(P, q, sgn);
}

/*
 * The open exits of a condition being compiled: the successor slots that
 * are taken when it holds (t) and when it does not (f), still to be
 * patched. Each list is threaded through the slots themselves: a slot of
 * the list holds the next one's reference (predicate << 1 | which slot),
 * the last RT_FNIL.
 */
struct rt_flist {
	uint32_t head, tail;
};
struct rt_fexits {
	struct rt_flist t, f;
};

static uint32_t *rt_fslot(struct rt_fparser *P, uint32_t ref)
{
	return &P->insn[ref >> 1].next[ref & 1];
}

static struct rt_flist rt_fjoin(struct rt_fparser *P, struct rt_flist a, struct rt_flist b)
{
	if (a.head == RT_FNIL)
		return b;
	if (b.head != RT_FNIL) {
		*rt_fslot(P, a.tail) = b.head;
		a.tail = b.tail;
	}
	return a;
}

/* Point every slot of list l at `to` (a predicate or a verdict). */
static void rt_fpatch(struct rt_fparser *P, struct rt_flist l, uint32_t to)
{
	for (uint32_t r = l.head; r != RT_FNIL;) {
		uint32_t *slot = rt_fslot(P, r);
		r = *slot;
		*slot = to;
	}
}

/* pred := FIELD OP VALUE; the current token is the field name. */
static int rt_fpred(struct rt_fparser *P, const uint32_t *fixed_off, struct rt_fexits *ex)
{
	struct rt_fpred_at q = {0};
	if (rt_fpred_field(P, &q) || rt_fpred_op(P, &q))
		return -1;
	const struct ringtrace_field_desc *fd = q.fd;
	if (fd->type == RINGTRACE_FT_ARRAY || fd->type == RINGTRACE_FT_FLOAT_ARRAY)
		return rt_ferr(
			P, q.fpos,
			"type mismatch: field \"%.*s\" is an array; arrays cannot be filtered on",
			q.fl, q.fname);
	int r = fd->type == RINGTRACE_FT_STRING || fd->type == RINGTRACE_FT_BYTES
			? rt_fpred_text(P, &q)
			: rt_fpred_scalar(P, &q);
	if (r)
		return -1;
	uint32_t i = P->ninsn - 1;
	struct rt_finsn *in = &P->insn[i];
	in->field = q.fi;
	in->size = fd->size;
	in->off = fixed_off[q.fi];
	in->next[0] = in->next[1] = RT_FNIL;
	ex->t = (struct rt_flist){i << 1 | 1, i << 1 | 1};
	ex->f = (struct rt_flist){i << 1, i << 1};
	return rt_fnext(P);
}

static int rt_fexpr(struct rt_fparser *P, const uint32_t *fixed_off, struct rt_fexits *ex);

/* unary := "!" unary | "(" expr ")" | pred */
static int rt_funary(struct rt_fparser *P, const uint32_t *fixed_off, struct rt_fexits *ex)
{
	if (P->tok == T_NOT || P->tok == T_LP) {
		if (++P->depth > RT_FMAX_DEPTH)
			return rt_ferr(P, P->pos,
				       "expression nested too deeply (more than %d levels)",
				       RT_FMAX_DEPTH);
		int r;
		if (P->tok == T_NOT) {
			if (rt_fnext(P) || rt_funary(P, fixed_off, ex))
				return -1;
			struct rt_flist t = ex->t;
			ex->t = ex->f;
			ex->f = t;
			r = 0;
		} else {
			size_t lp = P->pos;
			if (rt_fnext(P) || rt_fexpr(P, fixed_off, ex))
				return -1;
			if (P->tok != T_RP) {
				if (P->tok == T_END)
					return rt_ferr(
						P, lp,
						"unbalanced parentheses: '(' is never closed");
				return rt_ferr(P, P->pos,
					       "expected ')' or an operator, found " RT_TOKFMT,
					       RT_TOKARG(P));
			}
			r = rt_fnext(P);
		}
		P->depth--;
		return r;
	}
	if (P->tok == T_IDENT)
		return rt_fpred(P, fixed_off, ex);
	if (P->tok == T_END)
		return rt_ferr(P, P->pos,
			       "missing operand: expected a field, '!' or '(' at the end");
	if (P->tok == T_NUM || P->tok == T_STR)
		return rt_ferr(P, P->pos,
			       "expected a field name, found %s " RT_TOKFMT
			       " (the field goes on the left)",
			       rt_tok_text[P->tok], RT_TOKARG(P));
	return rt_ferr(P, P->pos, "missing operand: expected a field, '!' or '(', found " RT_TOKFMT,
		       RT_TOKARG(P));
}

/*
 * and := unary ("&&" unary)*; or := and ("||" and)*. a && b: a's true
 * exits go to b's first predicate (the next one emitted), its false exits
 * are the whole's; a || b the other way round.
 */
static int rt_fbinary(struct rt_fparser *P, const uint32_t *fixed_off, int is_or,
		      struct rt_fexits *ex)
{
	if (is_or ? rt_fbinary(P, fixed_off, 0, ex) : rt_funary(P, fixed_off, ex))
		return -1;
	int optok = is_or ? T_OR : T_AND;
	while (P->tok == optok) {
		if (rt_fnext(P))
			return -1;
		uint32_t first = P->ninsn;
		struct rt_fexits b;
		if (is_or ? rt_fbinary(P, fixed_off, 0, &b) : rt_funary(P, fixed_off, &b))
			return -1;
		if (is_or) {
			rt_fpatch(P, ex->f, first);
			ex->f = b.f;
			ex->t = rt_fjoin(P, ex->t, b.t);
		} else {
			rt_fpatch(P, ex->t, first);
			ex->t = b.t;
			ex->f = rt_fjoin(P, ex->f, b.f);
		}
	}
	return 0;
}

/* expr := or: a whole condition (the filter, or the inside of parentheses). */
static int rt_fexpr(struct rt_fparser *P, const uint32_t *fixed_off, struct rt_fexits *ex)
{
	return rt_fbinary(P, fixed_off, 1, ex);
}

/* ---- compile ----------------------------------------------------------------- */

static void rt_fprogram_forms(struct ringtrace_filter *f);

/* One block: the filter, its program (successors patched) and its
 * inline form, the layout and the literals; NULL when out of memory. */
static struct ringtrace_filter *rt_fblock(const struct rt_fparser *P,
					  const struct rt_flayout *layout, uint32_t nfields)
{
	size_t isz = (size_t)P->ninsn * sizeof(struct rt_finsn);
	size_t lsz = (size_t)nfields * sizeof(struct rt_flayout);
	size_t psz = (size_t)P->ninsn * 2 * sizeof(struct ringtrace_fast_pred_);
	struct ringtrace_filter *f = malloc(sizeof(*f) + isz + psz + lsz + P->npool + 1);
	if (!f)
		return NULL;
	f->ninsn = P->ninsn;
	f->nfields = nfields;
	memcpy(f->insn, P->insn, isz);
	/* (struct rt_finsn's size keeps the inline form 8-aligned) */
	f->iprog = (struct ringtrace_fast_pred_ *)(void *)((char *)f->insn + isz);
	char *tail = (char *)f->iprog + psz;
	memcpy(tail, layout, lsz);
	f->layout = (const struct rt_flayout *)tail;
	if (P->npool)
		memcpy(tail + lsz, P->pool, P->npool);
	f->pool = tail + lsz;
	return f;
}

int ringtrace_filter_compile(const struct ringtrace_field_desc *fields, uint32_t nfields,
			     const char *expr, ringtrace_filter **out, unsigned *err_column)
{
	if (err_column)
		*err_column = 0;
	if (!out || !expr || (nfields && !fields))
		return rt_error(RINGTRACE_EINVAL, "filter: NULL argument");
	*out = NULL;

	/* The layout: validate the schema and find the fixed offsets. */
	struct rt_flayout *layout = calloc(nfields ? nfields : 1, sizeof(*layout));
	uint32_t *fixed_off = calloc(nfields ? nfields : 1, sizeof(*fixed_off));
	struct rt_fparser P;
	memset(&P, 0, sizeof(P));
	int rc = 0;
	if (!layout || !fixed_off) {
		rc = rt_error(RINGTRACE_ENOMEM, "filter: out of memory");
		goto done;
	}
	uint64_t o = 0;
	uint32_t var_field = nfields, min_len = 0;
	for (uint32_t i = 0; i < nfields; i++) {
		const struct ringtrace_field_desc *fd = &fields[i];
		struct rt_flayout *l = &layout[i];
		unsigned al = fd->align ? fd->align : 1;
		const char *nm = fd->name ? fd->name : "?";
		char why_buf[80];
		const char *why;
		if (rt_field_check(fd, why_buf, sizeof(why_buf), &why) < 0) {
			rc = rt_error(RINGTRACE_EINVAL, "filter: schema field \"%.64s\": %s", nm,
				      why);
			goto done;
		}
		l->type = fd->type;
		l->size = fd->size;
		l->align = (uint8_t)al;
		uint64_t bytes = rt_field_fixed_bytes(fd);
		l->bytes = (uint32_t)(bytes > UINT32_MAX ? UINT32_MAX : bytes);
		if (var_field == nfields) {
			o = (o + al - 1) & ~(uint64_t)(al - 1);
			if (o + bytes > UINT32_MAX - 8) {
				rc = rt_error(RINGTRACE_EINVAL,
					      "filter: schema field \"%.64s\": record too large",
					      nm);
				goto done;
			}
			fixed_off[i] = (uint32_t)o;
			if (fd->type == RINGTRACE_FT_STRING || fd->type == RINGTRACE_FT_BYTES) {
				/* Its offset is still fixed; the ones after it are not. */
				var_field = i;
				min_len = (uint32_t)o;
			} else {
				o += bytes;
			}
		} else {
			fixed_off[i] = RT_VAR_OFF;
		}
	}
	if (var_field == nfields)
		min_len = (uint32_t)o;

	P.s = expr;
	P.n = strlen(expr);
	P.fields = fields;
	P.nfields = nfields;
	if (rt_fnext(&P))
		goto perr;
	if (P.tok == T_END) {
		rt_ferr(&P, P.pos, "empty expression");
		goto perr;
	}
	struct rt_fexits ex;
	if (rt_fexpr(&P, fixed_off, &ex))
		goto perr;
	if (P.tok != T_END) {
		if (P.tok == T_RP)
			rt_ferr(&P, P.pos, "unbalanced parentheses: ')' without '('");
		else
			rt_ferr(&P, P.pos,
				"trailing " RT_TOKFMT
				" after a complete condition (missing && or ||?)",
				RT_TOKARG(&P));
		goto perr;
	}

	rt_fpatch(&P, ex.t, RT_FACCEPT);
	rt_fpatch(&P, ex.f, RT_FREJECT);
	struct ringtrace_filter *f = rt_fblock(&P, layout, nfields);
	if (!f) {
		rc = rt_error(RINGTRACE_ENOMEM, "filter: out of memory");
		goto done;
	}
	f->min_len = min_len;
	f->var_field = var_field;
	rt_fprogram_forms(f);
	*out = f;
	rt_error_clear();
	goto done;
perr:
	rc = P.err;
	if (err_column)
		*err_column = P.col;
done:
	free(P.insn);
	free(P.pool);
	free(layout);
	free(fixed_off);
	return rc;
}

/*
 * The range form of an integer test (ringtrace_fast_pred_, off left 0):
 * 1 and *fp filled in, or 0 if the test has none (not INT, UINT or BITS,
 * or a comparison that no value passes: v < min, v > max).
 */
static int rt_fast_none(struct ringtrace_fast_pred_ *fp)
{
	memset(fp, 0, sizeof(*fp));
	return 0;
}

static int rt_insn_range(const struct rt_finsn *in, struct ringtrace_fast_pred_ *fp)
{
	memset(fp, 0, sizeof(*fp));
	if (in->code != RT_F_INT && in->code != RT_F_UINT && in->code != RT_F_BITS)
		return 0;
	const uint64_t all = ~0ull;
	const uint64_t bits = in->size >= 8 ? all : (1ull << (8 * in->size)) - 1;
	fp->op = 1;
	fp->sh = (uint8_t)(64 - 8 * in->size);
	if (in->code == RT_F_BITS) {
		/* (v & m) != 0: sign-extended first when the field is signed */
		fp->mask = in->v.u & (in->is_signed ? all : bits);
		fp->lo = 1;
		fp->span = all - 1;
		return 1;
	}
	/* On the value zero-extended if unsigned, biased so that signed order
	 * becomes unsigned order if signed (^ 2^63): each comparison as one
	 * range [lo, lo + span]; the two that can be empty (v < min, v > max)
	 * keep their code. Then the bias goes into lo and the zero extension
	 * into the mask: ((v ^ b) & ~0) - lo == v - (lo ^ b), mod 2^64. */
	int is_signed = in->code == RT_F_INT;
	uint64_t bias = is_signed ? 1ull << 63 : 0;
	uint64_t k = in->v.u ^ bias; /* the literal, in the biased order */
	switch (in->cmp) {
	case RT_C_EQ:
		fp->lo = k;
		fp->span = 0;
		break;
	case RT_C_NE:
		fp->lo = k + 1;
		fp->span = all - 1;
		break; /* everything but k */
	case RT_C_LT:
		if (k == 0)
			return rt_fast_none(fp);
		fp->lo = 0;
		fp->span = k - 1;
		break;
	case RT_C_LE:
		fp->lo = 0;
		fp->span = k;
		break;
	case RT_C_GT:
		if (k == all)
			return rt_fast_none(fp);
		fp->lo = k + 1;
		fp->span = all - k - 1;
		break;
	default:
		fp->lo = k;
		fp->span = all - k;
		break; /* >= */
	}
	fp->lo ^= bias;
	fp->mask = is_signed ? all : bits;
	return 1;
}

/* The integer form of an integer test (rt_fexec), from its inline form
 * (or a form no value passes, for a comparison that has none). */
static void rt_insn_int_form(struct rt_finsn *in)
{
	int sgn = in->code == RT_F_INT || (in->code == RT_F_BITS && in->is_signed);
	static const uint8_t xs[9] = {0, RT_X_S1, RT_X_S2, 0, RT_X_S4, 0, 0, 0, RT_X_S8};
	static const uint8_t xu[9] = {0, RT_X_U1, RT_X_U2, 0, RT_X_U4, 0, 0, 0, RT_X_S8};
	in->x = sgn ? xs[in->size] : xu[in->size];
	if (rt_insn_range(in, &in->rg)) {
		in->mask = in->rg.mask;
		in->lo = in->rg.lo;
		in->span = in->rg.span;
	} else {
		in->mask = 0;
		in->lo = 1;
		in->span = 0;
	}
}

/* How a glob runs: its literal text alone, "literal*", or literals with
 * '*' and '?' compare as bytes on ASCII strings; anything else (or a
 * pattern with other bytes) goes to fnmatch. */
static void rt_insn_glob_form(struct rt_finsn *in, const char *pat)
{
	size_t n = in->arglen, stars = 0, qs = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)pat[i];
		if (c >= 0x80 || c == '[' || c == '\\') {
			in->x = RT_X_GLOB;
			return;
		}
		stars += c == '*';
		qs += c == '?';
	}
	if (!stars && !qs)
		in->x = RT_X_STR; /* fnmatch compares it as is */
	else if (stars == 1 && !qs && pat[n - 1] == '*') {
		in->x = RT_X_PREFIX;
		in->arglen = (uint32_t)n - 1;
	} else {
		in->x = RT_X_GLOB_QS;
	}
}

/*
 * Float comparisons in the inline form: a range of the field's bits,
 * loaded sign-extended to 64 (b). Zero and positive values, +inf and the
 * positive NaNs have b >= 0, in the order of their values, NaNs above
 * +inf (b = INF); -0, negative values, -inf and the negative NaNs have
 * b = MIN + their magnitude's bits, in the reverse order of their values.
 * So a comparison with a literal k (never a NaN) holds on the magnitudes
 * of one side or two, each a range of b: P(a, z) on the positive side,
 * N(a, z) on the negative one; no range reaches a NaN. -0 and +0 are the
 * same value.
 */
struct rt_frange_ctx {
	int f4;
	uint64_t min, inf;
	struct ringtrace_fast_pred_ *fp;
	int n;
};

static void rt_frange(struct rt_frange_ctx *c, uint64_t base, uint64_t a, uint64_t z)
{
	struct ringtrace_fast_pred_ *fp = &c->fp[c->n++];
	memset(fp, 0, sizeof(*fp));
	fp->op = RINGTRACE_FP_ONE;
	fp->sh = (uint8_t)(c->f4 ? 32 : 0);
	fp->mask = ~0ull;
	if (a > z) { /* empty: nothing passes */
		fp->mask = 0;
		fp->lo = 1;
		return;
	}
	fp->lo = base + a;
	fp->span = z - a;
}

#define RT_FP_P(c, a, z) rt_frange(c, 0, a, z)
#define RT_FP_N(c, a, z) rt_frange(c, (c)->min, a, z)

/* The 1 or 2 ranges (either passes) of a float test: their count. */
static int rt_insn_float_ranges(const struct rt_finsn *in, struct ringtrace_fast_pred_ fp[2])
{
	struct rt_frange_ctx c = {in->x == RT_X_F4, 0, 0, fp, 0};
	uint64_t m;
	int neg;
	if (c.f4) {
		float k = (float)in->v.d; /* exact: the literal was rounded to float */
		uint32_t u;
		memcpy(&u, &k, 4);
		m = u & 0x7fffffffu;
		neg = (int)(u >> 31);
		c.min = 0xffffffff80000000ull;
		c.inf = 0x7f800000u;
	} else {
		uint64_t u;
		memcpy(&u, &in->v.d, 8);
		m = u & 0x7fffffffffffffffull;
		neg = (int)(u >> 63);
		c.min = 0x8000000000000000ull;
		c.inf = 0x7ff0000000000000ull;
	}
	if (m == 0)
		neg = 0;
	switch (in->cmp) {
	case RT_C_EQ:
	case RT_C_NE:
		rt_frange(&c, neg ? c.min : 0, m, m);
		if (m == 0) /* -0 too: the bits below the sign are 0 */
			fp[0].mask = c.f4 ? 0x7fffffffu : 0x7fffffffffffffffull;
		if (in->cmp == RT_C_NE) { /* everything else, NaNs included */
			fp[0].lo += 1;
			fp[0].span = ~0ull - 1;
		}
		break;
	case RT_C_GT:
		if (!neg) {
			RT_FP_P(&c, m + 1, c.inf);
		} else {
			RT_FP_N(&c, 0, m - 1);
			RT_FP_P(&c, 0, c.inf);
		}
		break;
	case RT_C_GE:
		if (!neg && m) {
			RT_FP_P(&c, m, c.inf);
		} else {
			RT_FP_N(&c, 0, m);
			RT_FP_P(&c, 0, c.inf);
		}
		break;
	case RT_C_LT:
		if (neg || !m) {
			RT_FP_N(&c, m + 1, c.inf);
		} else {
			RT_FP_N(&c, 0, c.inf);
			RT_FP_P(&c, 0, m - 1);
		}
		break;
	default: /* <= */
		if (neg) {
			RT_FP_N(&c, m, c.inf);
		} else {
			RT_FP_N(&c, 0, c.inf);
			RT_FP_P(&c, 0, m);
		}
		break;
	}
	return c.n;
}

/* The ranges (1 or 2, either passes) of a scalar test in the inline form
 * (off 0, no successors): their count, 0 if it has none. */
static int rt_insn_ranges(const struct rt_finsn *in, struct ringtrace_fast_pred_ fp[2])
{
	if (in->x == RT_X_F4 || in->x == RT_X_F8)
		return rt_insn_float_ranges(in, fp);
	if (in->x > RT_X_U4)
		return 0;
	if (in->rg.op) {
		fp[0] = in->rg;
	} else { /* a comparison no value passes */
		memset(fp, 0, sizeof(*fp));
		fp->op = RINGTRACE_FP_ONE;
		fp->sh = (uint8_t)(64 - 8 * in->size);
		fp->lo = 1;
	}
	return 1;
}

/* A successor in the inline form: test i's first range, or a verdict. */
static uint8_t rt_fp_next(const uint32_t *first, uint32_t nx)
{
	return (uint8_t)(nx == RT_FACCEPT   ? RINGTRACE_FP_ACCEPT
			 : nx == RT_FREJECT ? RINGTRACE_FP_REJECT
					    : first[nx]);
}

/*
 * a && b where both test the same field the same way (offset, load, mask)
 * and fail to the same place: one range, if the two ranges meet in one.
 * Each range is an arc [lo, lo + span] of the 2^64 values; two arcs that
 * both start and end inside one half-turn from 0 or from 2^63 meet in one
 * arc or none. 1 if a now tests both (and goes where b went).
 */
static int rt_fp_and(struct ringtrace_fast_pred_ *a, const struct ringtrace_fast_pred_ *b)
{
	if (a->off != b->off || a->sh != b->sh || a->mask != b->mask || !a->mask)
		return 0;
	for (int k = 0; k < 2; k++) {
		uint64_t o = k ? 1ull << 63 : 0, x = a->lo - o, y = b->lo - o;
		if (x > ~0ull - a->span || y > ~0ull - b->span)
			continue; /* an arc wraps around from this origin */
		uint64_t lo = x > y ? x : y;
		uint64_t hi = x + a->span < y + b->span ? x + a->span : y + b->span;
		if (lo > hi) { /* nothing passes both */
			a->mask = 0;
			a->lo = 1;
			a->span = 0;
		} else {
			a->lo = lo + o;
			a->span = hi - lo;
		}
		a->next[1] = b->next[1];
		return 1;
	}
	return 0;
}

/* Join the tests of && chains that rt_fp_and can join (the test that was
 * joined in stays, for the other ways to it). */
static void rt_fprogram_join(struct ringtrace_fast_pred_ *prog, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ringtrace_fast_pred_ *a = &prog[i];
		while (a->next[1] < RINGTRACE_FP_REJECT && a->next[0] == prog[a->next[1]].next[0] &&
		       rt_fp_and(a, &prog[a->next[1]]))
			;
	}
}

/*
 * The program in the tracepoint's inline form, if it has one (iprog): a
 * test of two ranges becomes two, the first failing over to the second.
 */
static void rt_fprogram_inline(struct ringtrace_filter *f)
{
	uint32_t first[RINGTRACE_FP_REJECT], n = 0;
	struct ringtrace_fast_pred_ fp[2];
	if (!f->fixed || f->ninsn >= RINGTRACE_FP_REJECT) {
		f->iprog = NULL;
		return;
	}
	for (uint32_t i = 0; i < f->ninsn; i++) {
		int k = rt_insn_ranges(&f->insn[i], fp);
		first[i] = n;
		n += (uint32_t)k;
		if (!k || n >= RINGTRACE_FP_REJECT) {
			f->iprog = NULL;
			return;
		}
	}
	f->niprog = n;
	for (uint32_t i = 0; i < f->ninsn; i++) {
		const struct rt_finsn *in = &f->insn[i];
		int k = rt_insn_ranges(in, fp);
		for (int j = 0; j < k; j++) {
			struct ringtrace_fast_pred_ *t = &f->iprog[first[i] + (uint32_t)j];
			*t = fp[j];
			t->off = in->off;
			t->next[1] = rt_fp_next(first, in->next[1]);
			t->next[0] = j + 1 < k ? (uint8_t)(first[i] + (uint32_t)j + 1)
					       : rt_fp_next(first, in->next[0]);
		}
	}
	rt_fprogram_join(f->iprog, n);
}

/* The program in the inline form (RINGTRACE_FP_PROG), or NULL. */
const struct ringtrace_fast_pred_ *rt_filter_inline_prog(const ringtrace_filter *f)
{
	return f->iprog;
}

/*
 * How each predicate runs (rt_fexec), and whether the program is one of
 * fixed-offset scalar tests only (rt_fmatch_fixed).
 */
static void rt_fprogram_forms(struct ringtrace_filter *f)
{
	f->fixed = 1;
	for (uint32_t i = 0; i < f->ninsn; i++) {
		struct rt_finsn *in = &f->insn[i];
		switch (in->code) {
		case RT_F_INT:
		case RT_F_UINT:
		case RT_F_BITS:
			rt_insn_int_form(in);
			break;
		case RT_F_FLOAT:
			in->x = in->size == 4 ? RT_X_F4 : RT_X_F8;
			break;
		case RT_F_STR:
			in->x = RT_X_STR;
			break;
		case RT_F_GLOB:
			rt_insn_glob_form(in, f->pool + in->arg);
			break;
		default:
			in->x = RT_X_BYTES;
			break;
		}
		if (in->code >= RT_F_STR)
			in->neg = in->cmp == RT_C_NE;
		if (in->code >= RT_F_STR || in->off == RT_VAR_OFF)
			f->fixed = 0;
	}
	rt_fprogram_inline(f);
}

/*
 * The inline form of a filter that is one integer predicate on a field at
 * a fixed offset: what tracepoints evaluate without a call. 1 and *fp
 * filled in, or 0 if the filter is not that simple.
 */
int rt_filter_fast_form(const ringtrace_filter *f, struct ringtrace_fast_pred_ *fp)
{
	memset(fp, 0, sizeof(*fp));
	/* one test, or a first test that decides (the rest joined into it) */
	const struct ringtrace_fast_pred_ *t = f->iprog;
	if (!t || t->next[0] < RINGTRACE_FP_REJECT || t->next[1] < RINGTRACE_FP_REJECT ||
	    t->next[0] == t->next[1])
		return 0;
	*fp = *t;
	fp->next[0] = fp->next[1] = 0;
	if (t->next[1] == RINGTRACE_FP_ACCEPT)
		return 1;
	/* `!(test)`: the values outside the range, unless it holds them all */
	if (fp->span == ~0ull)
		return rt_fast_none(fp);
	fp->lo += fp->span + 1;
	fp->span = ~0ull - fp->span - 1;
	return 1;
}
