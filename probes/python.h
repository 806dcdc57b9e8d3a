/*
 * python.h - CPython frames in CPU profiles.
 *
 * A Python service's native stack is the interpreter's: its hot path is
 * _PyEval_EvalFrameDefault over and over, which names nothing a deploy
 * changed.  The BPF walker (bpf/profile.bpf.c) replaces those frames with
 * the Python frames they run, read from the interpreter's own structures
 * at sample time; this module tells it where they are and names what it
 * found:
 *
 *   1. python_interp_read: is an ELF file a CPython interpreter (a static
 *      python3 or a libpython), of which version, where are its evaluation
 *      loop, its runtime state and its code type.  Only its dynamic symbols
 *      are read (_PyRuntime, _PyEval_EvalFrameDefault, PyCode_Type,
 *      Py_Version), which every build exports for extension modules, so a
 *      stripped interpreter works.  The layout of the structures walked is
 *      a table per version (3.11 and 3.12), checked against the file: the
 *      version from Py_Version and the size of _PyRuntime must both match.
 *      Anything else is "not supported" with the reason, and the process
 *      keeps its native frames.
 *   2. python_interp_publish: the walker's view of it in one process (the
 *      addresses as mapped, struct unwind_python).
 *   3. python_frame_name: a walked Python frame (a code object's address
 *      and an instruction) as "module.function (file:line)", read from the
 *      live process (process_vm_readv) and kept per process and code
 *      object, so a long-running service costs one read per function
 *      (and one check per window that it is still the same code).
 *      The code object is checked to be one (its type is PyCode_Type) and
 *      the line comes from its location table (python_line_of).  A frame
 *      of a process that is gone, or whose code cannot be read, is named
 *      "[python]" and counted as unresolved: never a guess.
 */
#ifndef FL_PYTHON_H
#define FL_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/profile.h"

/* What one ELF file holds of a CPython interpreter (linked addresses). */
struct python_interp {
	uint16_t version;		/* 0x030b for 3.11 */
	uint64_t eval_vaddr, eval_size;	/* _PyEval_EvalFrameDefault */
	uint64_t runtime_vaddr;		/* _PyRuntime */
	uint64_t code_type_vaddr;	/* PyCode_Type */
	uint64_t text_offset, text_vaddr;	/* the PT_LOAD holding the loop: file offset, address */
	const struct python_layout *layout;
};

/* 1 if path's file name says it may be an interpreter (python3.11, libpython3.11.so.1.0). */
int python_file_name_matches(const char *path);

/*
 * Read the interpreter in the ELF file open on fd into *pi.  Returns 0,
 * -ENOENT (not an interpreter: no _PyRuntime or no evaluation loop among
 * its dynamic symbols), -ENOTSUP (an interpreter whose version or layout
 * is not supported; why in err) or -EINVAL (not an ELF file faultline
 * reads).
 */
int python_interp_read(int fd, struct python_interp *pi, char *err, size_t errlen);

/*
 * The same for the file at path, remembered by device, inode and mtime
 * (a mapping is published again and again).  A version not supported is
 * logged once per file.  Returns what python_interp_read returns.
 */
int python_interp_of(const char *path, struct python_interp *pi);

/*
 * The walker's view of pi in a process that maps file offset off at
 * [start, end).  Returns 1, or 0 when that mapping does not hold the
 * evaluation loop (*out untouched).
 */
int python_interp_publish(const struct python_interp *pi, uint64_t start, uint64_t end,
			  uint64_t off, struct unwind_python *out);

/*
 * The source line of instruction instr (an index in code units) from a
 * 3.11+ location table (co_linetable) starting at firstlineno.  Returns
 * the line, or -1 when the table has no location for it.  Any bytes are
 * survived (fuzz/fuzz_python_lines.c).
 */
int python_line_of(const uint8_t *table, size_t len, int firstlineno, uint32_t instr);

struct python_names;

struct python_names *python_names_new(void);
void python_names_free(struct python_names *pn);

/*
 * Name walked Python frame `frame` (PY_FRAME_TAG'd) of process pid,
 * whose interpreter is py, into buf: "module.function (file:line)".
 * py NULL (the process exited: its entry left the kernel's map): only
 * code named before is named.  Returns 1 if named, 0 if not (buf says
 * "[python]").
 */
int python_frame_name(struct python_names *pn, uint32_t pid, const struct unwind_python *py,
		      uint64_t frame, char *buf, size_t len);

/*
 * A window is being named: each code object named again is checked once
 * in it (its name, file and location table still the same objects), so
 * code freed and made again at the same address gets its own name.
 */
void python_names_new_window(struct python_names *pn);

/* Process pid exited or exec'd: its code objects' names are forgotten. */
void python_names_forget(struct python_names *pn, uint32_t pid);

#endif
