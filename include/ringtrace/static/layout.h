/*
 * ringtrace/static/layout.h - the layout version, and the link-time names
 * that carry it.
 *
 * VERSION-LOCKED INLINE CODE, NOT AN API. The headers under
 * ringtrace/static/ hold the code that call sites compile into a traced
 * program (as liburcu keeps urcu/static/): the recording fast path, the
 * read-side sections and the generated tracepoint functions. That code
 * reads and writes the library's private structures directly, so it
 * agrees with one layout of them only. Nothing here may be used directly.
 *
 * The lock is enforced at link time. Every symbol of the library that
 * static/ code refers to (the per-thread writer and event state, the
 * events word, the read-side counters, the out-of-line halves of the
 * recording code) is declared with RINGTRACE_LAYOUT_SYM_, which gives it
 * the link-time name "<C name>_layout<RINGTRACE_LAYOUT_VERSION>"; the
 * library's definitions take the same names from the same declarations.
 * A program compiled against headers of another layout refers to names
 * that this library does not define: it fails to link (static or shared
 * library), and a program linked before fails to start with a shared
 * library of another layout, instead of writing a layout the library does
 * not read. Every event definition and
 * every ringtrace_printf() call site refers to ringtrace_runtime_, so no
 * program that compiles static/ code escapes the check. The C names stay
 * as they are; the public API (ringtrace_session_start() ...) is not
 * versioned this way.
 *
 * RINGTRACE_LAYOUT_VERSION changes whenever anything that static/ code
 * compiles in changes meaning: a structure declared under static/ (the
 * writer state, the slot and buffer heads, the thread's event state, the
 * reader node, the event descriptor, a filter's inline form, a printf
 * site), a constant or state bit they use, or the page and event
 * encoding of ringtrace/format.h that the inline path writes. It is not
 * the library's SOVERSION: the SOVERSION (CMakeLists.txt) changes when a
 * program linked against the previous release cannot run against this
 * one, which includes every change of the layout version (the old
 * program's versioned names are gone) as well as incompatible changes of
 * the public API; a layout change therefore always comes with a new
 * SOVERSION, while a public API change leaves the layout version alone
 * (docs/format.md, "Compatibility").
 */
#ifndef RINGTRACE_STATIC_LAYOUT_H
#define RINGTRACE_STATIC_LAYOUT_H

#define RINGTRACE_LAYOUT_VERSION 3

#define RINGTRACE_LAYOUT_STR2_(x) #x
#define RINGTRACE_LAYOUT_STR_(x) RINGTRACE_LAYOUT_STR2_(x)
/*
 * The link-time name of a symbol that static/ code refers to: an assembler
 * name after its declarator (before any attribute), e.g.
 *     extern int ringtrace_x_ RINGTRACE_LAYOUT_SYM_(ringtrace_x_);
 * names it ringtrace_x__layout3. (ELF: a C name is its symbol's name,
 * with no prefix.)
 */
#define RINGTRACE_LAYOUT_SYM_(name) \
	__asm__(#name "_layout" RINGTRACE_LAYOUT_STR_(RINGTRACE_LAYOUT_VERSION))

#endif /* RINGTRACE_STATIC_LAYOUT_H */
