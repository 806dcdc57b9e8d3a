/*
 * profile.h - layout shared by bpf/profile.bpf.c and probes/profile.c.
 *
 * Samples are counted in the kernel per (process, user stack, kernel
 * stack), so a window costs a few thousand map entries however many
 * samples it holds.  Two generations of the count and stack maps exist;
 * user space flips `gen` at every flush and drains the other one, so no
 * increment is lost while it reads.
 */
#ifndef FL_BPF_PROFILE_H
#define FL_BPF_PROFILE_H

#define PROFILE_STACK_DEPTH 127
#define PROFILE_MAX_KEYS 65536
#define PROFILE_MAX_STACKS 16384

struct profile_key {
	__u32 tgid;
	__s32 user_stack;	/* stack map id, or negative errno (unwound: 0) */
	__s32 kern_stack;
	__u32 unwound;		/* 1: the user stack is dwarf_stacks[user_hash] */
	__u64 user_hash;
};

/*
 * I/O stacks: one block request per CPU per io_interval_ns counts its
 * submitter's stacks (frame pointers; the kernel part is what says how it
 * writes) per (device, op, process, user stack, kernel stack), with its
 * bytes; and the submitter's next switch-out inside io_schedule() counts
 * its stacks there (where it waits) with the time until it runs again.
 * The same generations as CPU samples: user space drains both together.
 */
#define IO_MAX_KEYS 4096
#define IO_SUBMIT 0
#define IO_WAIT 1

struct io_key {
	__u32 tgid;
	__s32 user_stack;	/* stack map id, or negative errno */
	__s32 kern_stack;
	__u32 dev;		/* the disk's dev_t, kernel encoding (bpf/blk_rq.h) */
	__u8 op;		/* BLOCK_OP_* (bpf/block.h) */
	__u8 kind;		/* IO_SUBMIT, IO_WAIT */
	__u16 pad;
};

struct io_val {
	__u64 count;		/* requests, or waits */
	__u64 amount;		/* their bytes, or the ns waited */
};

/* Per task: the device of its last sampled request, and a wait in progress. */
struct io_task {
	__u64 out_ns;		/* switched out in io_schedule at, 0: not waiting */
	__u32 dev;
	__u8 op, armed;		/* armed: the next io wait is counted */
	__u16 pad;
	__s32 user_stack, kern_stack;	/* where it waits */
	__u32 gen;		/* the generation its stacks are in */
	__u32 pad2;
};

/*
 * DWARF unwinding (probes/unwind.h): rows of call frame information, one
 * array for every file; per process its executable mappings.
 */
#define UNWIND_MAX_FRAMES 64	/* a power of two */
#define UNWIND_MAX_MAPS 48
#define UNWIND_MAX_PROCS 8192
#define UNWIND_MAX_STACKS 8192
#define UNWIND_BSEARCH_STEPS 24	/* rows of one file < 2^24 */

enum unwind_cfa {
	UNWIND_CFA_NONE = 0,	/* no rule here: frame pointers */
	UNWIND_CFA_RSP,		/* CFA = rsp + cfa_off */
	UNWIND_CFA_RBP,		/* CFA = rbp + cfa_off */
	UNWIND_CFA_PLT,		/* CFA = rsp + 8 (+ 8 when (rip & 15) >= cfa_off) */
	UNWIND_CFA_STOP,	/* the outermost frame: return address undefined */
};

enum unwind_rbp {
	UNWIND_RBP_SAME = 0,	/* the caller's rbp is this frame's */
	UNWIND_RBP_AT,		/* saved at CFA + rbp_off */
};

struct unwind_row {
	__u32 pc;		/* ELF address from which the rule holds */
	__u8 cfa;		/* enum unwind_cfa */
	__u8 rbp;		/* enum unwind_rbp */
	__s16 rbp_off;
	__s32 cfa_off;
	__u32 pad;		/* an array map's elements are 8-byte aligned (mmap stride) */
};

/*
 * One executable mapping: addresses [start, end) are ELF address + bias.
 * first UNWIND_LAZY (count 0): its file's rows are built when a sample
 * needs them (the walker asks, profile_proc_event.want), not before.
 */
struct unwind_map {
	__u64 start, end, bias;
	__u32 first, count;	/* its file's rows in the rows array */
};

#define UNWIND_LAZY 0xffffffffU

/*
 * A CPython interpreter the process runs (probes/python.h): where its
 * evaluation loop's code is, where the running thread state is found, and
 * the offsets of the fields the walker reads, for its version.  eval_end
 * 0: no interpreter, or one of a version not supported.
 *
 * When a walk reaches a frame in [eval_start, eval_end) and the thread
 * state holding the GIL is this thread's (its thread_id is the thread's
 * pthread_t, which is its fs base on x86-64), the interpreter's own frame
 * is replaced by the Python frames it runs: from the thread's current
 * frame back to the one that entered that evaluation (3.11: is_entry;
 * 3.12: the frame before the entry's shim frame, owned by the C stack),
 * leaf first, each as a PY_FRAME_TAG'd address naming the code object and the
 * instruction it is at.  Otherwise the native frame stays: a name is
 * never guessed.
 */
struct unwind_python {
	__u64 eval_start, eval_end;	/* _PyEval_EvalFrameDefault, as mapped */
	/*
	 * Where the GIL holder's thread state is: read the pointer at
	 * tstate_at, then follow tstate_chain[0..ntstate_chain) (3.11: the
	 * pointer at _PyRuntime.gilstate.tstate_current; 3.12: the main
	 * interpreter, its GIL, the GIL's last holder)
	 */
	__u64 tstate_at;
	__u64 code_type;		/* &PyCode_Type, as mapped: user space checks it */
	__u16 version;			/* 0x030b: 3.11, 0x030c: 3.12 */
	__u16 tstate_chain[2];
	__u16 ntstate_chain;
	__u16 tstate_cframe, tstate_thread_id, cframe_current_frame;
	__u16 frame_code, frame_previous, frame_prev_instr;
	__u16 frame_is_entry;		/* 3.11: the frame that entered an evaluation; else PY_NO_FIELD */
	__u16 frame_owner;		/* 3.12: a frame's owner; else PY_NO_FIELD */
	__u16 owner_cstack;		/* 3.12: the owner of an evaluation's entry (shim) frame */
	__u16 code_adaptive;		/* the first instruction, in the code object */
	__u16 pad;
};

#define PY_NO_FIELD 0xffff

/*
 * A Python frame in a walked stack: bit 63 set (never a user address),
 * the instruction's index in its code (16 bits, saturated) at bits 47..62,
 * the code object's address in bits 0..46.
 */
#define PY_FRAME_TAG (1ULL << 63)
#define PY_FRAME_ADDR_MASK ((1ULL << 47) - 1)
#define PY_FRAME_INSTR_SHIFT 47

struct unwind_proc {
	__u32 n;
	__u32 pad;
	__u64 asked_ns;		/* when a sample last asked for the mappings again */
	struct unwind_python py;
	struct unwind_map m[UNWIND_MAX_MAPS];	/* sorted by start */
};

struct unwind_stack {
	__u32 n;
	__u32 pad;
	__u64 ip[UNWIND_MAX_FRAMES];	/* leaf first, as bpf_get_stackid gives */
};

/*
 * Sent once per new process, so user space can snapshot its mappings
 * (exited 0), and when such a process exits (exited 1).
 */
struct profile_proc_event {
	__u32 tgid;
	__u32 exited;
	char comm[16];
	__u64 want;		/* the start of a UNWIND_LAZY mapping a walk went through; 0 none */
};

#endif
