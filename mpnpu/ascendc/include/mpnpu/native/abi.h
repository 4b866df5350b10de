/* The C ABI between a compiled kernel library and mpnpu's core process (mpnpu/ascendc/native/bridge.py).
 *
 * A core process loads the kernel library, fills an MpnpuLaunch for its core and calls mpnpu_run()
 * with the kernel's arguments as 64-bit slots (a GM tensor: its address in this process; a scalar:
 * its value). Everything the kernel does that other cores see (SyncAll, cross-core flags, holds)
 * goes back to the core process through the MpnpuCoreCalls callbacks, so that Python and C++ kernels
 * share one implementation of each (mpnpu.runtime.kcontext). With tracing on, the library records
 * every access and sync as MpnpuEvent records that the core process reads after the launch.
 *
 * Its numbers (MPNPU_ABI_VERSION, the enums' values, the array sizes) are defined once, in Python
 * (mpnpu/ascendc/native/abi.py, mpnpu/runtime/), and generated into contract.h; every struct here has
 * a ctypes mirror in mpnpu/ascendc/native/abi.py, and contract_checks.h (generated, included at the
 * end) makes a build fail when a field's offset or size differs from the mirror's.
 */
#ifndef MPNPU_ABI_H
#define MPNPU_ABI_H

#include <stdint.h>

#include "contract.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Callbacks into the core process. Each returns 0 on success; non-zero means the core process
 * raised (it keeps the exception and re-raises it once mpnpu_run has returned). */
typedef struct MpnpuCoreCalls {
    int32_t (*sync_all)(int32_t aiv_only, int32_t site);
    int32_t (*flag_set)(int32_t mode, int32_t flag_id, int32_t pipe, int32_t site);
    /* mode MPNPU_ANY_MODE: the wait consumes sets made in whatever mode its setters used (on this
     * chip a wait has no mode of its own); *resolved_mode tells which. */
    int32_t (*flag_wait)(int32_t mode, int32_t flag_id, int32_t site, int32_t* resolved_mode);
    /* A GM access at a site named by the launch's hold plan: before (after = 0) or after it. */
    int32_t (*hold)(int32_t site, int32_t after);
    /* A sync the library made itself on the core process's sync objects (MpnpuNativeSync) failed:
     * the core process raises what its own implementation raises (kind: MPNPU_NATIVE_*). Returns
     * non-zero (the error is pending). */
    int32_t (*sync_error)(int32_t kind, int32_t a, int32_t b, int32_t c);
} MpnpuCoreCalls;

/* The core process's sync objects as a library may drive them itself, without a callback per
 * operation (include/mpnpu/native_sync.h): the POSIX semaphores and shared words behind the
 * multiprocessing Barrier of SyncAll, the flag semaphores of modes 1 and 2, and the status board.
 * The protocol is the one mpnpu/runtime/sync.py runs on the same objects, step for step. */
typedef struct MpnpuNativeBarrier {
    void* lock;       /* sem_t* of the Condition's lock */
    void* sleeping;   /* sem_t* of its sleeping count */
    void* woken;      /* sem_t* of its woken count */
    void* wait_sem;   /* sem_t* it wakes sleepers with */
    int32_t* words;   /* the Barrier's shared [state, count] */
    int32_t parties;  /* 0: no barrier handed over (SyncAll calls back into the core process) */
    int32_t pad;
} MpnpuNativeBarrier;

/* One core's end of flag (mode, id): the semaphores a set releases (one per receiver) and those a
 * wait takes (one per sender, in order). valid = 0: not a flag this core may use natively. */
typedef struct MpnpuNativeFlag {
    int32_t valid;
    int32_t n_out;
    int32_t n_in;
    int32_t pad;
    int32_t out_receiver[MPNPU_NATIVE_MAX_ROUTES];
    void* out_sem[MPNPU_NATIVE_MAX_ROUTES];
    void* out_wake[MPNPU_NATIVE_MAX_ROUTES]; /* sem_t* a receiver's mode-less wait sleeps on */
    void* in_sem[MPNPU_NATIVE_MAX_ROUTES];
} MpnpuNativeFlag;

typedef struct MpnpuNativeSync {
    int32_t abi;              /* MPNPU_ABI_VERSION */
    int32_t core_id;
    int64_t* status;          /* the status board, st_columns int64 per core */
    int32_t st_columns;
    int32_t flag_counter_max; /* a counter holds 0..max */
    int8_t* flag_modes;       /* per (receiver, id): the mode + 1 of the last set routed there, 0: none */
    uint64_t timeout_ns;      /* the launch's sync timeout */
    MpnpuNativeBarrier barrier_all;
    MpnpuNativeBarrier barrier_aiv;
    MpnpuNativeFlag flags[MPNPU_FLAG_MODES][MPNPU_FLAG_IDS]; /* by mode (mode 0 is never native) and id */
    void* mode_wake;          /* sem_t* this core's mode-less waits sleep on (a set that makes a mode
                                 known releases the receiver's) */
    uint64_t* used;           /* bit mode * MPNPU_FLAG_IDS + id set once the library set that flag in this
                                 launch (the core process reports it, so that the parent clears it) */
    uint64_t spin_ns;         /* a wait looks again (yielding the CPU) this long before it sleeps */
} MpnpuNativeSync;

/* What a native sync reports through sync_error: MPNPU_NATIVE_* (contract.h). */

/* One GM allocation a launch's arguments point into (address in this process, bytes). */
typedef struct MpnpuRegion {
    uint64_t addr;
    uint64_t size;
} MpnpuRegion;

/* Kernel types (KERNEL_TYPE_* of the Ascend C kernel API, same order): MPNPU_KT_* (contract.h). */

/* A sync a launch inserts at a boundary of one of the kernel's functions, to try a repair without
 * editing the source (the library is then built with -finstrument-functions: mpnpu/ascendc/kernel.py). */
typedef struct MpnpuInsert {
    uint64_t fn_offset;  /* the function, as an offset from the library's load address */
    int32_t at_entry;    /* 1: on entering the function; 0: on leaving it */
    int32_t kind;        /* MPNPU_INS_* */
    int32_t mode;        /* flags: the mode */
    int32_t flag_id;     /* flags: the id */
    const char* name;    /* the sync point name its trace records carry ("+after:CopyOut") */
    const char* stage;   /* the function's name, as the trace names its stage */
} MpnpuInsert;

typedef struct MpnpuLaunch {
    int32_t abi;          /* MPNPU_ABI_VERSION */
    int32_t core_type;    /* 0: vector core (AIV), 1: cube core (AIC) */
    int32_t kernel_type;  /* MPNPU_KT_* of the launch */
    int32_t block_idx;    /* GetBlockIdx() */
    int32_t block_num;    /* GetBlockNum() */
    int32_t subblock_idx; /* GetSubBlockIdx() */
    int32_t subblock_num; /* GetSubBlockNum() */
    int32_t task_ration;  /* GetTaskRation() */
    int32_t trace;        /* record MpnpuEvent records */
    int32_t memcheck;     /* check every access against its tensor or buffer */
    uint64_t tiling_key;  /* TILING_KEY_IS(k) */
    int32_t n_regions;
    const MpnpuRegion* regions;
    int32_t n_dropped;            /* sync points the launch skips, "dir/file:line" */
    const char* const* dropped;
    const char* hold_site;        /* "dir/file:line" of this core's hold-plan access, or NULL */
    const MpnpuCoreCalls* core_calls;
    uint64_t sys_workspace_bytes; /* what GetUserWorkspace skips (0 in CPU-debug style) */
    char* last_words;             /* where a fatal signal handler leaves "at file:line (function)" */
    int32_t last_words_size;
    int32_t pipes;                /* MPNPU_PIPES_* mask: asynchronous MTE1/MTE2/MTE3/FIX, the compiler's
                                     automatic synchronisation (mpnpu/native/pipes.h) */
    uint64_t pipe_latency_ns;     /* the longest a queued instruction waits while the core keeps issuing */
    uint64_t sync_timeout_ns;     /* the longest the kernel thread waits for its own pipes */
    int32_t n_inserts;            /* syncs inserted at function boundaries, this core's only */
    const MpnpuInsert* inserts;
    MpnpuNativeSync* native;      /* the sync objects to drive directly, or NULL: every sync calls back */
    int64_t* calls;               /* this core's ST_CALLS cell of the status board: the API call count */
    char* where;                  /* this core's "where" line: the kernel line it blocks at, or (asked by
                                     the watchdog's signal) its last API call's */
    int32_t where_size;
    int32_t host_mode;            /* 1: the host program chose the cores (a CPU-debug launch after
                                     SetKernelMode), which the kernel's KERNEL_TASK_TYPE_DEFAULT then does
                                     not overrule */
    uint64_t sys_fallback;        /* a system workspace of mpnpu's own for this launch (a CPU-debug launch:
                                     one of its GM regions), or 0: where REGIST_MATMUL_OBJ keeps its state
                                     when the workspace the kernel gives is too small for it */
} MpnpuLaunch;

/* A trace record. type: MPNPU_EV_*; see mpnpu/ascendc/native/abi.py for how each field is read. */
typedef struct MpnpuEvent {
    uint8_t type;
    uint8_t kind;   /* accesses: 'R', 'W', 'A' (atomic); pipe syncs: 's' set, 'w' wait, 'b' barrier, 'x' cross-core set */
    uint8_t pipe;   /* mpnpu pipe number (PIPE_* of the kernel API) */
    uint8_t mem;    /* local accesses: memory (MPNPU_MEM_*); flags: mode; SyncAll: aiv_only; pipe syncs and
                       flags: | MPNPU_SYNC_BY_LIBRARY when a high-level API issued it */
    int32_t site;   /* site id (mpnpu_site) */
    int32_t index;  /* GM accesses: region; pipe syncs: event id; flags: flag id; dropped: which call */
    int32_t aux;    /* GM accesses: item size; pipe syncs: HardEvent number */
    uint64_t start; /* first byte, from the region's (GM) or the memory's (local) start */
    uint64_t run;   /* bytes per run */
    uint64_t stride;/* bytes from one run's start to the next's (runs > 1) */
    uint64_t count; /* runs */
    uint64_t t0;    /* CLOCK_MONOTONIC ns */
    uint64_t t1;
} MpnpuEvent;

/* (types MPNPU_EV_*, memories MPNPU_MEM_*: contract.h) */

/* What stopped a kernel (mpnpu_run returned MPNPU_RUN_FAULT). */
typedef struct MpnpuFault {
    int32_t kind;     /* MPNPU_FAULT_* */
    int32_t site;     /* where (site id), -1 if unknown */
    int32_t region;   /* GM region or local memory involved, -1 if none */
    int32_t mem;      /* MPNPU_MEM_* for local memory faults, -1 for GM */
    uint64_t start;   /* requested bytes [start, stop) */
    uint64_t stop;
    uint64_t limit_lo;/* allowed bytes [limit_lo, limit_hi) */
    uint64_t limit_hi;
    char message[512];
} MpnpuFault;

/* (kinds MPNPU_FAULT_*: contract.h) */

/* A program that links the kernel in (a CPU-debug unit test, mpnpu/cpudebug.h) hands the core process
 * these instead of a library's exported symbols. */
typedef struct MpnpuExports {
    int32_t abi;
    int32_t (*run)(const MpnpuLaunch* launch, void* fn, const uint64_t* slots, int32_t n_slots);
    int64_t (*events)(const MpnpuEvent** out);
    int32_t (*site)(int32_t id, const char** file, int32_t* line, const char** func);
    const MpnpuFault* (*fault)(void);
} MpnpuExports;

/* One ICPU_RUN_KF: what the host program asks mpnpu to launch. */
typedef struct MpnpuCpuDebugLaunch {
    int32_t abi;
    const char* kernel;       /* the kernel as ICPU_RUN_KF names it */
    const char* file;         /* where ICPU_RUN_KF stands */
    int32_t line;
    int32_t block_dim;
    int32_t kernel_mode;      /* KernelMode: 0 MIX (1 cube + 2 vector cores per block), 1 AIC, 2 AIV */
    uint64_t tiling_key;
    void* fn;                 /* the kernel function */
    const char* signature;    /* its parameter kinds, as mpnpu_entry_signature */
    int32_t n_args;
    const uint64_t* slots;
    const char* arg_names;    /* the arguments as written, "x, y, z, workspace, tiling" */
    const MpnpuExports* exports;
} MpnpuCpuDebugLaunch;

/* A core process's native serving loop (mpnpu_serve, include/mpnpu/serve.h): it reads the launch
 * commands on the core's pipe itself and runs those it can without the core process's Python (a
 * kernel it was registered for, every argument a GM tensor in a window it was told of), replying
 * on the reply board as the core process would; anything else goes back to the core process. The
 * wire formats are mpnpu/runtime/protocol.py's (a native command frame, a compact done reply). */
/* A kernel the loop may launch: the command's handle, the library's mpnpu_run, and this core's
 * launch struct for it, with its slot and region arrays. */
typedef struct MpnpuServeEntry {
    int64_t handle;
    int32_t (*run)(const MpnpuLaunch* launch, const uint64_t* slots, int32_t n_slots);
    MpnpuLaunch* launch;
    uint64_t* slots;
    MpnpuRegion* regions;
    int32_t n_params;
    int32_t memcheck;
    uint64_t tiling_key;
    uint64_t sys_workspace_bytes;
    uint64_t* used; /* the launch's native flag marks (MpnpuNativeSync.used), or NULL */
} MpnpuServeEntry;

/* A GM allocation's window in this process (mpnpu/ascendc/native/windows.py), in an open-addressing
 * table keyed by (segment key, root offset, bytes); addr 0: an empty slot. */
typedef struct MpnpuServeWindow {
    uint64_t segment;
    uint64_t root_offset;
    uint64_t nbytes;
    uint64_t addr;
} MpnpuServeWindow;

typedef struct MpnpuServe {
    int32_t abi;          /* MPNPU_ABI_VERSION */
    int32_t fd;           /* the core's end of its pipe */
    int32_t core_id;
    int32_t n_cores;      /* the device's core processes (the reply board's parties) */
    int32_t n_entries;
    int32_t replied;      /* in: the core has just replied (look for the next command a while first) */
    MpnpuServeEntry entries[MPNPU_SERVE_MAX_ENTRIES];
    MpnpuServeWindow* windows;
    uint64_t window_mask; /* the table has window_mask + 1 slots (a power of two) */
    /* the reply board (mpnpu/runtime/replies.py): rows of row_size bytes, the fields at these offsets */
    uint8_t* rows;
    int32_t row_size;
    int32_t row_flags;    /* (mode, id) pairs a row holds */
    int32_t off_launch_id;
    int32_t off_elapsed;
    int32_t off_n_flags;
    int32_t off_flags;
    int64_t* done;
    void* board_lock;     /* sem_t* */
    int64_t* status;      /* the status board: st_columns int64 per core */
    int32_t st_columns;
    int32_t spin_cpus;    /* the CPUs spin_ns was worked out for (mpnpu/runtime/spin.py owns the rule);
                             -1: a fixed budget. After each launch the loop counts this process's
                             CPUs and returns MPNPU_SERVE_RESPIN when they differ */
    uint64_t spin_ns;     /* how long to look for the next command after a reply */
    uint64_t timeout_ns;  /* the board lock's */
    uint8_t* buf;         /* the frame read last: header and payload, buf_len bytes of frame_len */
    int64_t buf_cap;
    int64_t buf_len;
    int64_t frame_len;
    /* out: the launch the loop stopped at (MPNPU_SERVE_FAILED / _REPLY) */
    int64_t launch_id;
    int32_t entry;        /* the entry running or last run (callbacks find its library by it) */
    int32_t rc;           /* mpnpu_run's */
    double elapsed_s;
    uint64_t flags_mask;  /* bit mode * MPNPU_FLAG_IDS + id: the flags the launch set */
    uint64_t extra_used;  /* in: flags the core process's callbacks set during the launch (same bits) */
    uint64_t served;      /* launches run natively so far */
} MpnpuServe;

/* What mpnpu_serve returns (why it handed control back to the core process): MPNPU_SERVE_*, and
 * what mpnpu_run returns: MPNPU_RUN_* (contract.h; documented in mpnpu/ascendc/native/abi.py). */

#ifdef __cplusplus
}
#include "contract_checks.h"
#endif

#endif /* MPNPU_ABI_H */
