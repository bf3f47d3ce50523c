/*
 * Text from a trace on the terminal: names, thread names, formats and
 * file names come from a trace's metadata or page headers, which anyone
 * can write, and a control byte in them (an ESC sequence, a newline) would
 * reach the terminal or forge a line of output. out_esc() gives the text
 * with each such byte as \xNN (C0 controls, DEL, and the C1 controls in
 * their UTF-8 form, 0xc2 0x80..0x9f; other UTF-8 as it is), the same
 * rule as `ringtrace report` (ringtrace_trace_format_line).
 */
#ifndef RINGTRACE_TOOLS_OUTPUT_H
#define RINGTRACE_TOOLS_OUTPUT_H

/*
 * s escaped, in one of eight buffers used in turn (so up to eight may
 * appear in one printf); "" for NULL; cut at 4096 bytes of input with
 * "..." after it. Not thread-safe: the command prints from one thread.
 */
const char *out_esc(const char *s);

#endif
