/* sampler_bpf_shared.h: what the BPF program (sampler_bpf.bpf.c, compiled with clang -target
 * bpf) and its loader (sampler_bpf.c) agree on: the sample record of the ring buffer, the unwind
 * table rows built from .eh_frame/.debug_frame (unwind/cfitable.h), each process' executable
 * mappings, the Python frame chain read at the sample and the counters. Plain C types only, no
 * pointers: both sides include it. */
#ifndef CSAMPLER_SAMPLER_BPF_SHARED_H
#define CSAMPLER_SAMPLER_BPF_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define CSB_MAX_KERNEL 127         /* kernel frames per sample (perf's sample_max_stack) */
#define CSB_MAX_USER 255           /* user frames per sample: 127 cut 4.5% of the PyTorch loop's
				    * (imports nest Python calls 130 and more frames deep) */
#define CSB_FP_MASK_BITS 128       /* frames fp_mask can mark: a walk that needs a frame-pointer
				    * step beyond them stops there, cut (and goes with a slice) */
#define CSB_MAX_MAPS 256           /* executable file mappings per process with a table */
#define CSB_MAX_ROWS (8u << 20)    /* unwind rows of every file, 8 bytes each (64 MiB) */
#define CSB_RING_BYTES (4u << 20)  /* the sample ring buffer, before bpf_open sizes it */

/* csb_sample.flags: how the user stack walk ended */
#define CSB_USER_COMPLETE 0x1  /* reached the outermost frame's row (RA undefined) */
#define CSB_USER_ERROR 0x2     /* stopped: unreadable memory, a frame that did not move up */
#define CSB_USER_TRUNCATED 0x4 /* CSB_MAX_USER frames, not the end */
#define CSB_USER_NO_TABLE 0x8  /* a frame was unwound by frame pointer: no table covered it */
#define CSB_USER_ANON 0x10     /* stopped at a PC in no file mapping (JIT code) */
#define CSB_KERNEL_THREAD 0x20 /* no user part */
#define CSB_USER_FP_END 0x80   /* ended at a zero frame pointer, after a frame-pointer step */
#define CSB_USER_SLICE 0x40    /* the walk is uncertain (it took a frame-pointer step and did not
				* end at an outermost frame's row) or cut at CSB_MAX_USER frames:
				* the record carries the leaf registers and a slice of the stack
				* for user space's unwinder */

#define CSB_SLICE_RECORD 0x100 /* the record is a struct csb_slice_sample */
#define CSB_USER_SPS 0x200     /* nuser stack pointers follow the kernel frames, one per user
				* frame (its callee's CFA; the leaf's sp first): a process whose
				* Python activations are found by where their entry frames are
				* (csb_pyproc.want_sps, CPython 3.14) */
#define CSB_PY_RETURNING 0x400 /* the innermost activation's frame was returning (3.12+): unlinked
				* from the chain, found above the outer frame by its link to the shim */

#define CSB_SLICE_MAX 32768        /* bytes of stack in such a record, at most */
#define CSB_ROW_MEMO_SLOTS 4096   /* each CPU's memo of rows found (row_memo), a power of two */

/* csb_sample.py_state: the thread's CPython frame chain, read by the program at the sample
 * (a process of the pyprocs map only). Its frames follow user[nuser] in the record: npy
 * struct csb_pyframe, innermost first, the first at py_first. */
#define CSB_PY_NONE 0              /* not a process with a known interpreter (or a slice record) */
#define CSB_PY_END 1               /* the chain was read to its end (a frame with no previous) */
#define CSB_PY_TRUNCATED 2         /* CSB_PY_MAX frames read, the chain goes on */
#define CSB_PY_FAULT 3             /* a frame or the thread state could not be read */
#define CSB_PY_NO_THREAD 4         /* no PyThreadState of this thread (yet) */
#define CSB_PY_MAX 128             /* frames read per sample (shim frames included) */
#define CSB_PY_MAX_ACTS 16         /* 3.11, 3.12: _PyCFrames read per sample (activations) */

struct csb_sample {
	__u64 time;                /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u32 pid, tid, cpu, flags;
	__u32 nkernel, nuser;
	__u64 ip, sp, bp;          /* the leaf's user registers */
	__u32 slice, pad;          /* CSB_USER_SLICE: bytes of stack from sp in stack[] */
	__u32 py_state, npy;       /* CSB_PY_*, and frames after user[nuser] */
	__u64 py_first;            /* the innermost frame's address */
	__u32 py_nacts, pad2;      /* 3.11, 3.12: after the frames, the current frame of each
				    * native activation (its _PyCFrame's), innermost first: where
				    * each activation's frames begin, read at the sample too */
	__u64 fp_mask[2];          /* bit i: user[i] was found by a frame-pointer step (i < 128) */
	__u64 user[CSB_MAX_USER];  /* leaf first: the sampled PC, then return addresses */
};

/* Where a record's nkernel kernel frames are: in a slice record, its kernel[]; in the others,
 * after the user frames, the Python frames and their activations, so that a record is as long
 * as what it holds (a fixed kernel[] in the head was 1 KiB a sample, mostly empty: writing
 * the ring was most of the program's run time on this VM, some 3.5 us a KiB). */
#define CSB_KERNEL_AT(nuser, npy, nacts) \
	(offsetof(struct csb_sample, user) + (nuser) * 8ull + \
	 (npy) * (unsigned long long)sizeof(struct csb_pyframe) + (nacts) * 8ull)

/* One _PyInterpreterFrame as read: its code object (f_code, 3.13's f_executable), instruction
 * (prev_instr, 3.13's instr_ptr) and link: previous frame's address (bits 0-47), is_entry (3.11,
 * bit 48) and owner (bits 56-63). The next frame of the record is at link's address. fp:
 * the code object's co_qualname and co_filename pointers at the sample, folded (base/pywalk.h's
 * PYWALK_CODE_FP; 0: not read), so that user space, naming the code object later, knows it is
 * still the one the sample ran (not freed and its address reused by another). */
struct csb_pyframe {
	__u64 code, instr, link, fp;
};
#define CSB_PYLINK_ADDR ((1ull << 48) - 1)
#define CSB_PYLINK_ENTRY (1ull << 48)
#define CSB_PYLINK_OWNER_SHIFT 56

/* Where a process' thread states and their frame chains are (the pyprocs map, by tgid), from
 * the recorder's layout of its CPython version (unwind/python.c): interp_head is the address
 * of _PyRuntime.interpreters.head; offsets as python.c's struct py_layout names them. */
struct csb_pyproc {
	__u64 interp_head;
	__u32 interp_next, interp_threads_head, tstate_next, tstate_native_tid;
	__u32 tstate_cframe;       /* 3.11, 3.12: the frame is at cframe + cframe_current_frame */
	__u32 cframe_current_frame, cframe_previous;
	__u32 tstate_current_frame;/* 3.13 (tstate_cframe 0) */
	__u32 frame_code, frame_previous, frame_instr;
	__u32 frame_is_entry;      /* 0: none (3.12+) */
	__u32 frame_owner;
	__u32 frame_read;          /* bytes read of a frame, <= CSB_PY_FRAME_READ */
	__u32 code_qualname, code_filename; /* PyCodeObject.co_qualname, co_filename */
	__u32 gen;                 /* changes when the process' entry is written again */
	__u32 code_tag;            /* tag bits of the frame's code pointer, cleared (3.14) */
	__u32 want_sps;            /* records carry the user frames' stack pointers (CSB_USER_SPS) */
	__u32 owner_cstack;        /* 3.12+: a frame whose owner is this or more is a shim (the
				    * entry frame on an activation's C stack); 0 before 3.12 */
};
#define CSB_PY_FRAME_READ 128

/* An uncertain walk's record (the ring holds it whole, CSB_USER_SLICE says whether stack[]
 * holds slice bytes); the others are a csb_sample cut after user[nuser] and their Python
 * frames. */
struct csb_slice_sample {
	struct csb_sample head;
	__u64 kernel[CSB_MAX_KERNEL];      /* head.nkernel kernel frames */
	struct csb_pyframe py[CSB_PY_MAX]; /* head.npy Python frames (the others: after user[]) */
	__u64 py_acts[CSB_PY_MAX_ACTS];    /* head.py_nacts activations' current frames */
	__u8 stack[CSB_SLICE_MAX];
};

/* One unwind rule, valid from pc to the next row's pc (offsets in the file's address space,
 * the ELF's p_vaddr numbering). cfa = (CSB_ROW_CFA_BP ? bp : sp) + cfa_off; the return
 * address is at cfa - 8 (x86-64); the caller's bp is at cfa + 8 * bp_off8 when
 * CSB_ROW_BP_SAVED, else unchanged. 8 bytes a row (16 before: 4 Mi rows in 64 MiB held the
 * PyTorch loop's files only just, libtorch_cpu.so alone 1.4 Mi): a rule whose offsets do not
 * fit (bp saved off a multiple of 8 or beyond +-1 KiB) becomes a gap row. */
#define CSB_ROW_BP_SAVED 0x1
#define CSB_ROW_END 0x2            /* the return address is undefined: the outermost frame */
#define CSB_ROW_GAP 0x4            /* no rule here (between FDEs, or one we cannot express) */
#define CSB_ROW_CFA_BP 0x8         /* the CFA is rbp + cfa_off (else rsp + cfa_off) */
struct csb_row {
	__u32 pc;
	__s16 cfa_off;
	__s8 bp_off8;              /* the saved bp's offset from the CFA, in 8-byte words */
	__u8 flags;
};

/* A process' executable file mappings with a table, sorted by start: rel = pc - bias is the
 * pc in the file's numbering; its rows are rows[first, first + count). */
struct csb_map {
	__u64 start, end, bias;
	__u32 first, count;
};
struct csb_proc {
	__u32 nmaps, pad;
	struct csb_map maps[CSB_MAX_MAPS];
};

/* Settings the loader writes into .rodata before loading. */
#define CSB_FILTER_PIDS 0          /* the processes of the targets map */
#define CSB_FILTER_ALL 1           /* record -a */
#define CSB_FILTER_CGROUP 2        /* --cgroup: tasks under one cgroup (v2) */

/* The per-CPU counters (the stats map, one array of CSB_STAT_N per CPU). */
enum csb_stat {
	CSB_STAT_SAMPLES,          /* samples written to the ring */
	CSB_STAT_LOST,             /* samples the full ring refused */
	CSB_STAT_NS,               /* time in the program for the targets' samples, ns */
	CSB_STAT_PY,               /* samples whose Python frames the program read */
	CSB_STAT_PY_NS,            /* ... and the time the program took for them, ns */
	CSB_STAT_SINCE_QUERY,      /* ring bytes written since the ring's fill was last asked */
	CSB_STAT_N,
};

#endif
