// libmpnpu_cpudebug: what a CPU-debug unit test links instead of the vendor's CPU library. It embeds
// the Python interpreter that mpnpu is installed in (MPNPU_PYTHON, fixed when the library is built
// by `python -m mpnpu.ascendc --libs`) and hands GmAlloc / GmFree / ICPU_RUN_KF to
// mpnpu.tools.cpudebug, which runs the kernel on the multi-process device.
#include <Python.h>

#include <atomic>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "mpnpu/native/abi.h"

#ifndef MPNPU_PYTHON
#error "MPNPU_PYTHON (the interpreter mpnpu is installed in) must be defined"
#endif

namespace {

PyObject* g_module = nullptr;
int32_t g_kernel_mode = -1;
uint64_t g_tiling_key = 0;
// Calls into mpnpu in progress: a Ctrl-C or SIGTERM that lands during one is handed to the
// interpreter (which ends the program in order: 130 / 143, nothing left behind); one that lands in
// the program's own code does what it would do without mpnpu.
std::atomic<int> g_in_call{0};

[[noreturn]] void give_up(const char* what) {
    std::fprintf(stderr, "mpnpu: %s\n", what);
    std::fflush(stderr);
    std::_Exit(3);
}

void finish() {
    if (!g_module) return;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* r = PyObject_CallMethod(g_module, "shutdown", nullptr);
    if (!r) PyErr_Clear();
    Py_XDECREF(r);
    PyGILState_Release(g);
}

void on_signal(int sig) {
    if (g_in_call.load() > 0) {
        PyErr_SetInterruptEx(sig);  // async-signal-safe: the interpreter raises at its next instruction
        return;
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

// For each of SIGINT and SIGTERM that the program left at its default: the interpreter's handler
// at the Python level (KeyboardInterrupt, Terminated), and at the C level on_signal, which forwards
// only during calls. A signal the program handles or ignores keeps that (a program started in the
// background of a non-interactive shell ignores SIGINT; its SIGTERM still ends it in order).
// ``defaults``: which of the two were at SIG_DFL before the interpreter started (it may install
// handlers of its own while it starts).
void forward_signals(PyObject* module, const bool defaults[2]) {
    const int sigs[2] = {SIGINT, SIGTERM};
    if (!defaults[0] && !defaults[1]) return;
    PyObject* r = PyObject_CallMethod(module, "install_signal_handlers", "ii", int(defaults[0]), int(defaults[1]));
    if (!r) {  // no Python handler to hand a signal to: forwarding it would swallow it
        PyErr_Clear();
        return;
    }
    Py_DECREF(r);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < 2; ++i) {
        if (defaults[i]) sigaction(sigs[i], &sa, nullptr);
    }
}

// The embedded interpreter and mpnpu.tools.cpudebug, started once (before any core process is forked).
PyObject* cpudebug_module() {
    static std::once_flag once;
    std::call_once(once, [] {
        bool started = false;
        struct sigaction before_int, before_term;
        sigaction(SIGINT, nullptr, &before_int);
        sigaction(SIGTERM, nullptr, &before_term);
        const bool program_defaults[2] = {before_int.sa_handler == SIG_DFL, before_term.sa_handler == SIG_DFL};
        if (!Py_IsInitialized()) {
            PyConfig config;
            PyConfig_InitPythonConfig(&config);
            config.install_signal_handlers = 0;  // the test program keeps its own signal handling
            config.parse_argv = 0;
            PyStatus st = PyConfig_SetBytesString(&config, &config.executable, MPNPU_PYTHON);
            if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
            PyConfig_Clear(&config);
            if (PyStatus_Exception(st)) give_up("cannot start the Python interpreter mpnpu is installed in ("
                                                MPNPU_PYTHON ")");
            started = true;
        } else {
            PyGILState_Ensure();  // an interpreter that is already running (a Python host): take its lock
        }
        g_module = PyImport_ImportModule("mpnpu.tools.cpudebug");
        if (!g_module) {
            PyErr_Print();
            give_up("cannot import mpnpu.tools.cpudebug (is mpnpu installed in " MPNPU_PYTHON "?)");
        }
        if (started) forward_signals(g_module, program_defaults);
        std::atexit(finish);
        if (started) PyEval_SaveThread();  // every later call takes the interpreter lock for itself
    });
    return g_module;
}

// Calls mpnpu.tools.cpudebug.<name>(args...) and returns its integer result; a Python exception is
// reported and ends the program (it is a bug or a misuse, never something to continue after).
long long call(const char* name, const char* format, ...) {
    PyObject* mod = cpudebug_module();
    struct InCall {
        InCall() { g_in_call.fetch_add(1); }
        ~InCall() { g_in_call.fetch_sub(1); }
    } in_call;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject* fn = PyObject_GetAttrString(mod, name);
    va_list ap;
    va_start(ap, format);
    PyObject* args = Py_VaBuildValue(format, ap);
    va_end(ap);
    PyObject* r = fn && args ? PyObject_CallObject(fn, args) : nullptr;
    Py_XDECREF(fn);
    Py_XDECREF(args);
    if (!r) {
        PyErr_Print();
        PyGILState_Release(g);
        give_up("internal error in mpnpu.tools.cpudebug (see above)");
    }
    long long v = PyLong_Check(r) ? PyLong_AsLongLong(r) : 0;
    Py_DECREF(r);
    PyGILState_Release(g);
    return v;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* mpnpu_cpudebug_gm_alloc(size_t size) {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(call("gm_alloc", "(K)", (unsigned long long)size)));
}

__attribute__((visibility("default"))) void mpnpu_cpudebug_gm_free(void* ptr) {
    call("gm_free", "(K)", (unsigned long long)reinterpret_cast<uintptr_t>(ptr));
}

__attribute__((visibility("default"))) void mpnpu_cpudebug_set_kernel_mode(int32_t mode) { g_kernel_mode = mode; }

__attribute__((visibility("default"))) void mpnpu_cpudebug_set_tiling_key(uint64_t key) { g_tiling_key = key; }

// The settings a test leaves for the next ones (the last SetKernelMode and ICPU_SET_TILING_KEY): in one
// GoogleTest process they carry over, so mpnpu's test main hands them from a forked test back to the
// program (mpnpu/tools/ut/gtest).
__attribute__((visibility("default"))) void mpnpu_cpudebug_host_state(int32_t* mode, uint64_t* key) {
    *mode = g_kernel_mode;
    *key = g_tiling_key;
}

__attribute__((visibility("default"))) void mpnpu_cpudebug_run_kf(const MpnpuCpuDebugLaunch* launch) {
    MpnpuCpuDebugLaunch l = *launch;
    l.kernel_mode = g_kernel_mode;
    l.tiling_key = g_tiling_key;
    long long code = call("run_kf", "(K)", (unsigned long long)reinterpret_cast<uintptr_t>(&l));
    if (code != 0) {
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(int(code));  // mpnpu.tools.cpudebug has said why and released every core and segment
    }
}

}  // extern "C"
