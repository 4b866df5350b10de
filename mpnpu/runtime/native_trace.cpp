// The Python front end's trace recorder in C: the functions a traced launch of a Python kernel calls
// for every local-tensor operand and every pipe sync (mpnpu/api/_trace.py: record_local, record_sync)
// and for every record's kernel line (mpnpu/runtime/kcontext.py: call_site). They make exactly the
// records the Python functions make, without a Python frame per record.
//
// Built by mpnpu/runtime/native_trace.py as the CPython extension module _mpnpu_native_trace, against
// the running interpreter's and numpy's headers; configure() hands it the Python side's caches and
// record types, so both ways share them.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>  // (PyFrame_GetBack: declared here up to Python 3.10)
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cstdint>
#include <ctime>
#include <initializer_list>

namespace {

// What configure() was given (strong references, kept for the life of the process).
PyObject* g_prefixes = nullptr;     // dict: code -> "dir/file.py:" of kernel code, "" of mpnpu's own
PyObject* g_sites = nullptr;        // dict: (code, line) -> "dir/file.py:line"
PyObject* g_site_prefix = nullptr;  // callable(code) -> its prefix, adding it to g_prefixes
PyTypeObject* g_local_access = nullptr;
PyTypeObject* g_pipe_sync = nullptr;
PyTypeObject* g_access = nullptr;
PyObject* g_byte_ranges = nullptr;  // callable(tensor) -> its byte ranges as a trace ships them
// gm_access's byte ranges by (offset, shape, strides, itemsize), as kcontext keeps them (emptied once
// it holds kRangesKept): kernels re-read the same tiles, and one shared tuple pickles once per launch
PyObject* g_ranges = nullptr;
constexpr Py_ssize_t kRangesKept = 4096;
PyObject* g_unknown = nullptr;  // "?": no kernel frame on the stack
PyObject* g_zero = nullptr;

PyObject* s_events = nullptr;
PyObject* s_pipe_aware = nullptr;
PyObject* s_tpipe = nullptr;
PyObject* s_spans = nullptr;
PyObject* s_stage = nullptr;
PyObject* s_pipes = nullptr;
PyObject* s_observed_ns = nullptr;
PyObject* s_value = nullptr;
PyObject* s_dtype = nullptr;
PyObject* s_storage = nullptr;
PyObject* s_itemsize = nullptr;
PyObject* s_offset = nullptr;
PyObject* s_shape = nullptr;
PyObject* s_strides = nullptr;
PyObject* s_name = nullptr;
PyObject* s_segment = nullptr;
PyObject* s_root_offset = nullptr;
PyObject* g_empty = nullptr;  // ""
PyObject* g_set = nullptr;    // "set"
PyObject* g_wait = nullptr;   // "wait"

// A kernel line's site string by (code object, line), direct-mapped, in front of g_sites: the
// dictionary's key is a tuple holding a code object, whose hash walks the code's fields on every
// lookup. An entry holds strong references, so its code object's address is not reused while cached.
struct SiteEntry {
  PyObject* code;
  int line;
  PyObject* site;
};
constexpr std::size_t kSiteSlots = 1024;
SiteEntry g_site_cache[kSiteSlots] = {};
// The prefix of a code object, likewise (nullptr prefix: not cached).
struct PrefixEntry {
  PyObject* code;
  PyObject* prefix;
};
constexpr std::size_t kPrefixSlots = 512;
PrefixEntry g_prefix_cache[kPrefixSlots] = {};

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock of time.monotonic_ns
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::size_t slot_of(const void* p, std::size_t slots) {
  return (reinterpret_cast<std::uintptr_t>(p) >> 4) & (slots - 1);
}

// Store (code, value) in a cache entry's two slots, taking new references. The entry holds the new
// pair before the old one is released: releasing a code object can run Python, which may come back
// to this slot.
void hold_entry(PyObject*& code_slot, PyObject*& value_slot, PyObject* code, PyObject* value) {
  Py_INCREF(code);
  Py_INCREF(value);
  PyObject* old_code = code_slot;
  PyObject* old_value = value_slot;
  code_slot = code;
  value_slot = value;
  Py_XDECREF(old_code);
  Py_XDECREF(old_value);
}

// The prefix of ``code`` (borrowed), as kcontext._site_prefix says; nullptr with an exception set.
PyObject* prefix_of(PyObject* code) {
  PrefixEntry& e = g_prefix_cache[slot_of(code, kPrefixSlots)];
  if (e.code == code) return e.prefix;
  PyObject* prefix = PyDict_GetItemWithError(g_prefixes, code);  // borrowed
  if (prefix == nullptr) {
    if (PyErr_Occurred()) return nullptr;
    PyObject* made = PyObject_CallOneArg(g_site_prefix, code);
    if (made == nullptr) return nullptr;
    Py_DECREF(made);  // (the dictionary holds it)
    prefix = PyDict_GetItemWithError(g_prefixes, code);
    if (prefix == nullptr) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "the site prefix was not recorded");
      return nullptr;
    }
  }
  if (!PyUnicode_Check(prefix)) {
    PyErr_SetString(PyExc_TypeError, "a site prefix must be a str");
    return nullptr;
  }
  hold_entry(e.code, e.prefix, code, prefix);
  return prefix;
}

// The site of kernel line ``line`` of ``code`` (new reference), shared with kcontext._SITES.
PyObject* site_at(PyObject* code, int line, PyObject* prefix) {
  SiteEntry& e = g_site_cache[(slot_of(code, kSiteSlots) + static_cast<std::size_t>(line) * 31) & (kSiteSlots - 1)];
  if (e.code == code && e.line == line) {
    Py_INCREF(e.site);
    return e.site;
  }
  PyObject* number = PyLong_FromLong(line);
  if (number == nullptr) return nullptr;
  PyObject* key = PyTuple_Pack(2, code, number);
  Py_DECREF(number);
  if (key == nullptr) return nullptr;
  PyObject* site = PyDict_GetItemWithError(g_sites, key);
  if (site != nullptr) {
    Py_INCREF(site);
  } else if (!PyErr_Occurred()) {
    site = PyUnicode_FromFormat("%U%d", prefix, line);
    if (site != nullptr && PyDict_SetItem(g_sites, key, site) < 0) Py_CLEAR(site);
  }
  Py_DECREF(key);
  if (site == nullptr) return nullptr;
  hold_entry(e.code, e.site, code, site);
  e.line = line;
  return site;
}

// The site of the instruction a frame is at, by (code object, instruction offset), direct-mapped, in
// front of site_at: a frame's line is found by decoding its code's line table from the start
// (PyFrame_GetLineNumber), which cost more than the rest of a lookup; the offset is a field. Strong
// references, as in g_site_cache.
struct InstrEntry {
  PyObject* code;
  int lasti;
  PyObject* site;
};
constexpr std::size_t kInstrSlots = 2048;
InstrEntry g_instr_cache[kInstrSlots] = {};

// The offset of the instruction ``frame`` is at, in units of kLastiBytes (-1: not started).
#if PY_VERSION_HEX >= 0x030B0000
constexpr int kLastiBytes = 1;  // (PyFrame_GetLasti: in bytes)
int last_instruction(PyFrameObject* frame) { return PyFrame_GetLasti(frame); }
#else
constexpr int kLastiBytes = 2;  // (3.10: f_lasti counts code units of two bytes)
int last_instruction(PyFrameObject* frame) { return frame->f_lasti; }
#endif

// The site of kernel code ``code`` where ``frame`` is (new reference); nullptr with an exception set.
PyObject* site_of_frame(PyFrameObject* frame, PyObject* code, PyObject* prefix) {
  const int lasti = last_instruction(frame);
  if (lasti < 0) return site_at(code, PyFrame_GetLineNumber(frame), prefix);  // (not started: not kept)
  InstrEntry& e = g_instr_cache[(slot_of(code, kInstrSlots) + static_cast<std::size_t>(lasti) * 61) & (kInstrSlots - 1)];
  if (e.code == code && e.lasti == lasti) {
    Py_INCREF(e.site);
    return e.site;
  }
  // The line of the instruction from the code's own table (a tracer may set a frame's f_lineno;
  // kept by instruction, such a line would stay).
  PyObject* site = site_at(code, PyCode_Addr2Line(reinterpret_cast<PyCodeObject*>(code), lasti * kLastiBytes),
                           prefix);
  if (site == nullptr) return nullptr;
  hold_entry(e.code, e.site, code, site);
  e.lasti = lasti;
  return site;
}

// kcontext.call_site from the Python frame that called into this module: the innermost frame that
// is kernel code, as "dir/file.py:line"; "?" when there is none. New reference.
PyObject* current_site() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyObject* code = reinterpret_cast<PyObject*>(PyFrame_GetCode(frame));  // new reference
    PyObject* prefix = prefix_of(code);
    if (prefix == nullptr) {
      Py_DECREF(code);
      Py_DECREF(frame);
      return nullptr;
    }
    if (PyUnicode_GET_LENGTH(prefix) > 0) {
      PyObject* site = site_of_frame(frame, code, prefix);
      Py_DECREF(code);
      Py_DECREF(frame);
      return site;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  Py_INCREF(g_unknown);
  return g_unknown;
}

bool configured() {
  if (g_prefixes != nullptr) return true;
  PyErr_SetString(PyExc_RuntimeError, "_mpnpu_native_trace: configure() was not called");
  return false;
}

// The context's events list (new reference) when the launch records pipe-level accesses; Py_None
// (new reference) when it does not; nullptr with an exception set.
PyObject* traced_events(PyObject* c) {
  PyObject* events = PyObject_GetAttr(c, s_events);
  if (events == nullptr || events == Py_None) return events;
  PyObject* aware = PyObject_GetAttr(c, s_pipe_aware);
  if (aware == nullptr) {
    Py_DECREF(events);
    return nullptr;
  }
  int on = PyObject_IsTrue(aware);
  Py_DECREF(aware);
  if (on <= 0) {
    Py_DECREF(events);
    if (on < 0) return nullptr;
    Py_RETURN_NONE;
  }
  return events;
}

// Tracing time is not kernel time: add ``spent`` to c.pipes.observed_ns (PipeEngine.observed_ns).
int add_observed(PyObject* c, int64_t spent) {
  PyObject* pipes = PyObject_GetAttr(c, s_pipes);
  if (pipes == nullptr) return -1;
  PyObject* old = PyObject_GetAttr(pipes, s_observed_ns);
  int rc = -1;
  if (old != nullptr) {
    long long value = PyLong_AsLongLong(old);
    Py_DECREF(old);
    if (!(value == -1 && PyErr_Occurred())) {
      PyObject* updated = PyLong_FromLongLong(value + spent);
      if (updated != nullptr) {
        rc = PyObject_SetAttr(pipes, s_observed_ns, updated);
        Py_DECREF(updated);
      }
    }
  }
  Py_DECREF(pipes);
  return rc;
}

// A record of ``type`` (a NamedTuple class) holding ``n`` new references from ``items``.
PyObject* make_record(PyTypeObject* type, PyObject** items, Py_ssize_t n) {
  PyObject* record = type->tp_alloc(type, n);
  if (record == nullptr) {
    for (Py_ssize_t i = 0; i < n; ++i) Py_XDECREF(items[i]);
    return nullptr;
  }
  bool atomic = true;  // (no item the cyclic collector tracks)
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyTuple_SET_ITEM(record, i, items[i]);
    atomic = atomic && !(PyObject_IS_GC(items[i]) && PyObject_GC_IsTracked(items[i]));
  }
  // Then the record (a tuple of those items and a reference to its NamedTuple class, which holds no
  // record) can be in no reference cycle; the collector would untrack a plain tuple of them at its
  // first pass. Untracked now, a launch's thousands of records cost the young generation's
  // collections nothing.
  if (atomic) PyObject_GC_UnTrack(record);
  return record;
}

// The site argument given (new reference), or the current one when it is None or missing.
PyObject* site_arg(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t index) {
  if (nargs > index && args[index] != Py_None) {
    Py_INCREF(args[index]);
    return args[index];
  }
  return current_site();
}

// Append to ``events`` a record of ``type`` (LocalAccess or PipeSyncEvent, both of nine fields): the five
// fields of ``head`` (new references; nullptr where making one failed), then c.stage, the site
// (args[site_index] unless None or missing, else the current one), t0 = t1 = 0. 0, or -1 with an
// exception set; ``head`` is consumed either way.
int append_record(PyObject* events, PyTypeObject* type, PyObject* c, PyObject* const (&head)[5],
                  PyObject* const* args, Py_ssize_t nargs, Py_ssize_t site_index) {
  PyObject* items[9] = {head[0], head[1], head[2], head[3], head[4], nullptr, nullptr, g_zero, g_zero};
  Py_INCREF(g_zero);
  Py_INCREF(g_zero);
  bool made = true;  // (no further call once one has failed: its exception is the one raised)
  for (int i = 0; i < 5; ++i) made = made && head[i] != nullptr;
  items[5] = made ? PyObject_GetAttr(c, s_stage) : nullptr;
  items[6] = items[5] == nullptr ? nullptr : site_arg(args, nargs, site_index);
  bool complete = true;
  for (PyObject* item : items) complete = complete && item != nullptr;
  if (!complete) {
    for (PyObject* item : items) Py_XDECREF(item);
    return -1;
  }
  PyObject* record = make_record(type, items, 9);
  const int rc = record == nullptr || PyList_Append(events, record) < 0 ? -1 : 0;
  Py_XDECREF(record);
  return rc;
}

// The end of a record call: ``events`` released, the time since ``t`` left out of the pipes' model.
PyObject* finish_record(PyObject* c, PyObject* events, bool failed, int64_t t) {
  Py_DECREF(events);
  if (failed || add_observed(c, now_ns() - t) < 0) return nullptr;
  Py_RETURN_NONE;
}

PyObject* call_site(PyObject*, PyObject*) {
  if (!configured()) return nullptr;
  return current_site();
}

// record_local(c, kind, arr, pipe, site=None): _trace.record_local.
PyObject* record_local(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!configured()) return nullptr;
  if (nargs < 4 || nargs > 5) {
    PyErr_SetString(PyExc_TypeError, "record_local(c, kind, arr, pipe, site=None)");
    return nullptr;
  }
  PyObject* c = args[0];
  PyObject* events = traced_events(c);
  if (events == nullptr || events == Py_None) return events;
  if (!PyArray_Check(args[2])) {
    Py_DECREF(events);
    Py_RETURN_NONE;
  }
  const int64_t t = now_ns();
  PyArrayObject* arr = reinterpret_cast<PyArrayObject*>(args[2]);
  bool failed = false;
  if (PyArray_SIZE(arr) > 0) {
    // The byte hull of the view (TPipe.locate): its first and one-past-last bytes.
    std::intptr_t lo = reinterpret_cast<std::intptr_t>(PyArray_DATA(arr));
    std::intptr_t hi = lo;
    const int nd = PyArray_NDIM(arr);
    const npy_intp* dims = PyArray_DIMS(arr);
    const npy_intp* strides = PyArray_STRIDES(arr);
    for (int i = 0; i < nd; ++i) {
      if (strides[i] >= 0) {
        hi += (dims[i] - 1) * strides[i];
      } else {
        lo += (dims[i] - 1) * strides[i];
      }
    }
    hi += PyArray_ITEMSIZE(arr);
    PyObject* tpipe = PyObject_GetAttr(c, s_tpipe);
    PyObject* spans = tpipe == nullptr ? nullptr : PyObject_GetAttr(tpipe, s_spans);
    Py_XDECREF(tpipe);
    PyObject* memory = nullptr;
    std::intptr_t base = 0;
    if (spans == nullptr || !PyList_Check(spans)) {
      if (spans != nullptr) PyErr_SetString(PyExc_TypeError, "TPipe._spans must be a list");
      failed = true;
    } else {
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(spans); ++i) {
        PyObject* span = PyList_GET_ITEM(spans, i);
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 3) {
          PyErr_SetString(PyExc_TypeError, "a TPipe span must be (start, stop, memory)");
          failed = true;
          break;
        }
        long long a0 = PyLong_AsLongLong(PyTuple_GET_ITEM(span, 0));
        long long a1 = PyErr_Occurred() ? 0 : PyLong_AsLongLong(PyTuple_GET_ITEM(span, 1));
        if (PyErr_Occurred()) {
          failed = true;
          break;
        }
        if (a0 <= lo && hi <= a1) {
          memory = PyTuple_GET_ITEM(span, 2);
          base = static_cast<std::intptr_t>(a0);
          break;
        }
      }
    }
    if (!failed && memory != nullptr) {
      Py_INCREF(args[1]);
      Py_INCREF(memory);
      PyObject* start = PyLong_FromSsize_t(lo - base);
      PyObject* stop = start == nullptr ? nullptr : PyLong_FromSsize_t(hi - base);
      PyObject* const head[5] = {args[1], memory, start, stop,
                                 stop == nullptr ? nullptr : PyObject_GetAttr(args[3], s_value)};
      failed = append_record(events, g_local_access, c, head, args, nargs, 4) < 0;
    }
    Py_XDECREF(spans);
  }
  return finish_record(c, events, failed, t);
}

// record_sync(c, op, pipe, event, event_id, name, site=None): _trace.record_sync.
PyObject* record_sync(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!configured()) return nullptr;
  if (nargs < 6 || nargs > 7) {
    PyErr_SetString(PyExc_TypeError, "record_sync(c, op, pipe, event, event_id, name, site=None)");
    return nullptr;
  }
  PyObject* c = args[0];
  PyObject* events = traced_events(c);
  if (events == nullptr || events == Py_None) return events;
  const int64_t t = now_ns();
  Py_INCREF(args[1]);
  Py_INCREF(args[3]);
  Py_INCREF(args[4]);
  Py_INCREF(args[5]);
  PyObject* const head[5] = {args[1], PyObject_GetAttr(args[2], s_value), args[3], args[4], args[5]};
  return finish_record(c, events, append_record(events, g_pipe_sync, c, head, args, nargs, 6) < 0, t);
}

// record_sync_pair(c, src, dst, event, event_id, name): _trace.record_sync_pair, the set on ``src`` and
// the wait on ``dst`` of one SetFlag + WaitFlag pairing, at one kernel line looked up once.
PyObject* record_sync_pair(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!configured()) return nullptr;
  if (nargs != 6) {
    PyErr_SetString(PyExc_TypeError, "record_sync_pair(c, src, dst, event, event_id, name)");
    return nullptr;
  }
  PyObject* c = args[0];
  PyObject* events = traced_events(c);
  if (events == nullptr || events == Py_None) return events;
  const int64_t t = now_ns();
  PyObject* site = current_site();
  bool failed = site == nullptr;
  for (int k = 0; k < 2 && !failed; ++k) {
    PyObject* op = k == 0 ? g_set : g_wait;
    Py_INCREF(op);
    Py_INCREF(args[3]);
    Py_INCREF(args[4]);
    Py_INCREF(args[5]);
    PyObject* const head[5] = {op, PyObject_GetAttr(args[1 + k], s_value), args[3], args[4], args[5]};
    PyObject* const given[7] = {c, op, args[1 + k], args[3], args[4], args[5], site};
    failed = append_record(events, g_pipe_sync, c, head, given, 7, 6) < 0;
  }
  Py_XDECREF(site);
  return finish_record(c, events, failed, t);
}

// Field ``j`` of every event in ``rows`` (a list of tuples) as little-endian int64 bytes (a new
// reference), or nullptr with an exception set: a time column as EventColumns ships it.
PyObject* int64_column(PyObject* rows, Py_ssize_t j) {
  const Py_ssize_t count = PyList_GET_SIZE(rows);
  PyObject* column = PyBytes_FromStringAndSize(nullptr, count * 8);
  if (column == nullptr) return nullptr;
  unsigned char* out = reinterpret_cast<unsigned char*>(PyBytes_AS_STRING(column));
  for (Py_ssize_t i = 0; i < count; ++i) {
    const long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(PyList_GET_ITEM(rows, i), j));
    if (value == -1 && PyErr_Occurred()) {
      Py_DECREF(column);
      return nullptr;
    }
    const auto bits = static_cast<unsigned long long>(value);
    for (int b = 0; b < 8; ++b) out[8 * i + b] = static_cast<unsigned char>(bits >> (8 * b));
  }
  return column;
}

// The byte ranges of GM view ``t`` (new reference), kept (g_ranges).
PyObject* ranges_of(PyObject* t, PyObject* offset, PyObject* itemsize) {
  PyObject* shape = PyObject_GetAttr(t, s_shape);
  PyObject* strides = shape == nullptr ? nullptr : PyObject_GetAttr(t, s_strides);
  PyObject* key = strides == nullptr ? nullptr : PyTuple_Pack(4, offset, shape, strides, itemsize);
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  if (key == nullptr) return nullptr;
  PyObject* ranges = PyDict_GetItemWithError(g_ranges, key);
  if (ranges != nullptr) {
    Py_INCREF(ranges);
  } else if (!PyErr_Occurred()) {
    if (PyDict_GET_SIZE(g_ranges) >= kRangesKept) PyDict_Clear(g_ranges);
    ranges = PyObject_CallOneArg(g_byte_ranges, t);
    if (ranges != nullptr && PyDict_SetItem(g_ranges, key, ranges) < 0) Py_CLEAR(ranges);
  }
  Py_DECREF(key);
  return ranges;
}

// gm_access(c, kind, t, t0, site, pipe="", ran_on=""): kcontext.gm_access, the record of an access of
// ``kind`` to GM view ``t`` (t1 is now).
PyObject* gm_access(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!configured()) return nullptr;
  if (nargs < 5 || nargs > 7) {
    PyErr_SetString(PyExc_TypeError, "gm_access(c, kind, t, t0, site, pipe='', ran_on='')");
    return nullptr;
  }
  PyObject* t1 = PyLong_FromLongLong(now_ns());
  PyObject *c = args[0], *t = args[2];
  // (each call only once the ones before it succeeded: a failure's exception is the one raised)
  PyObject* dtype = t1 == nullptr ? nullptr : PyObject_GetAttr(t, s_dtype);
  PyObject* storage = dtype == nullptr ? nullptr : PyObject_GetAttr(dtype, s_storage);
  PyObject* itemsize = storage == nullptr ? nullptr : PyObject_GetAttr(storage, s_itemsize);
  PyObject* offset = itemsize == nullptr ? nullptr : PyObject_GetAttr(t, s_offset);
  PyObject* ranges = offset == nullptr ? nullptr : ranges_of(t, offset, itemsize);
  Py_XDECREF(dtype);
  Py_XDECREF(storage);
  Py_XDECREF(offset);
  PyObject* name = ranges == nullptr ? nullptr : PyObject_GetAttr(t, s_name);
  PyObject* segment = name == nullptr ? nullptr : PyObject_GetAttr(t, s_segment);
  PyObject* root = segment == nullptr ? nullptr : PyObject_GetAttr(t, s_root_offset);
  PyObject* stage = root == nullptr ? nullptr : PyObject_GetAttr(c, s_stage);
  PyObject* items[12] = {args[1], name, segment, ranges, root, itemsize, stage, args[4],
                         args[3], t1, nargs > 5 ? args[5] : g_empty, nargs > 6 ? args[6] : g_empty};
  Py_INCREF(items[0]);
  Py_INCREF(items[7]);
  Py_INCREF(items[8]);
  Py_INCREF(items[10]);
  Py_INCREF(items[11]);
  bool complete = true;
  for (PyObject* item : items) complete = complete && item != nullptr;
  if (!complete) {
    for (PyObject* item : items) Py_XDECREF(item);
    return nullptr;
  }
  return make_record(g_access, items, 12);
}

// A copy of tuple record ``ev`` (of its own type) with fields ``slot`` and ``slot + 1`` set to ``t0`` and
// ``t1`` (new references taken); nullptr with an exception set.
PyObject* with_times(PyObject* ev, Py_ssize_t slot, PyObject* t0, PyObject* t1) {
  const Py_ssize_t n = PyTuple_GET_SIZE(ev);
  PyObject* items[16];
  if (n > 16 || slot < 0 || slot + 1 >= n) {
    Py_DECREF(t0);
    Py_DECREF(t1);
    PyErr_SetString(PyExc_ValueError, "a record without its times where they were expected");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    items[i] = i == slot ? t0 : i == slot + 1 ? t1 : PyTuple_GET_ITEM(ev, i);
    if (i != slot && i != slot + 1) Py_INCREF(items[i]);
  }
  return make_record(Py_TYPE(ev), items, n);
}

// stamp_local(c, since): _trace.stamp_local, the local accesses recorded since ``since`` (first event,
// t0) given the times of their instruction (t0, now).
PyObject* stamp_local(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!configured()) return nullptr;
  Py_ssize_t first;
  long long start;
  if (nargs != 2 || !PyArg_ParseTuple(args[1], "nL", &first, &start)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "stamp_local(c, since)");
    return nullptr;
  }
  PyObject* c = args[0];
  PyObject* events = PyObject_GetAttr(c, s_events);
  if (events == nullptr) return nullptr;
  if (events == Py_None || first < 0) {
    Py_DECREF(events);
    Py_RETURN_NONE;
  }
  if (!PyList_Check(events)) {
    Py_DECREF(events);
    PyErr_SetString(PyExc_TypeError, "a core's events must be a list");
    return nullptr;
  }
  const int64_t t = now_ns();
  bool failed = false;
  PyObject* t0 = PyLong_FromLongLong(start);
  PyObject* t1 = t0 == nullptr ? nullptr : PyLong_FromLongLong(t);
  failed = t1 == nullptr;
  for (Py_ssize_t i = first; !failed && i < PyList_GET_SIZE(events); ++i) {
    PyObject* ev = PyList_GET_ITEM(events, i);
    if (Py_TYPE(ev) != g_local_access) continue;
    Py_INCREF(t0);
    Py_INCREF(t1);
    PyObject* timed = with_times(ev, PyTuple_GET_SIZE(ev) - 2, t0, t1);  // (t0 and t1: its last fields)
    failed = timed == nullptr || PyList_SetItem(events, i, timed) < 0;  // (SetItem takes the reference)
  }
  Py_XDECREF(t0);
  Py_XDECREF(t1);
  return finish_record(c, events, failed, t);
}

// The Access record at events[index] (``events`` a list) given the times (t0, now); None, or nullptr
// with an exception set.
PyObject* retime_at(PyObject* events, Py_ssize_t index, PyObject* t0) {
  if (index < 0 || index >= PyList_GET_SIZE(events) || Py_TYPE(PyList_GET_ITEM(events, index)) != g_access) {
    PyErr_SetString(PyExc_IndexError, "retime_access: no GM access record there");
    return nullptr;
  }
  PyObject* t1 = PyLong_FromLongLong(now_ns());
  if (t1 == nullptr) return nullptr;
  Py_INCREF(t0);
  PyObject* timed = with_times(PyList_GET_ITEM(events, index), 8, t0, t1);  // (Access.t0, .t1: 8, 9)
  if (timed == nullptr || PyList_SetItem(events, index, timed) < 0) return nullptr;
  Py_RETURN_NONE;
}

// retime_access(events, index, t0): the Access record at events[index] given the times of its copy
// (t0, now), from the pipe that ran it (kcontext._issue_traced).
PyObject* retime_access(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!configured()) return nullptr;
  if (nargs != 3 || !PyList_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "retime_access(events: list, index, t0)");
    return nullptr;
  }
  const Py_ssize_t index = PyNumber_AsSsize_t(args[1], PyExc_IndexError);
  if (index == -1 && PyErr_Occurred()) return nullptr;
  return retime_at(args[0], index, args[2]);
}

// A GM copy issued to an asynchronous pipe, as the pipe runs it (kcontext.traced_copy): the copy, then
// its record at events[index] given the copy's times.
struct TimedCopy {
  PyObject_HEAD
  PyObject* copy;
  PyObject* events;  // (a list)
  Py_ssize_t index;
};

// (collected: a copy's closure may hold the core's context, which holds the pipe queue holding this)
int timed_copy_traverse(PyObject* self, visitproc visit, void* arg) {
  TimedCopy* tc = reinterpret_cast<TimedCopy*>(self);
  Py_VISIT(Py_TYPE(self));  // (a heap type: its instances hold it)
  Py_VISIT(tc->copy);
  Py_VISIT(tc->events);
  return 0;
}

int timed_copy_clear(PyObject* self) {
  TimedCopy* tc = reinterpret_cast<TimedCopy*>(self);
  Py_CLEAR(tc->copy);
  Py_CLEAR(tc->events);
  return 0;
}

void timed_copy_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  timed_copy_clear(self);
  PyObject_GC_Del(self);
  Py_DECREF(type);
}

PyObject* timed_copy_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (PyTuple_GET_SIZE(args) != 0 || (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0)) {
    PyErr_SetString(PyExc_TypeError, "a timed copy takes no arguments");
    return nullptr;
  }
  TimedCopy* tc = reinterpret_cast<TimedCopy*>(self);
  if (tc->copy == nullptr || tc->events == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "a timed copy that was cleared");
    return nullptr;
  }
  PyObject* t0 = PyLong_FromLongLong(now_ns());
  if (t0 == nullptr) return nullptr;
  PyObject* done = PyObject_CallNoArgs(tc->copy);
  if (done == nullptr) {
    Py_DECREF(t0);
    return nullptr;
  }
  Py_DECREF(done);
  PyObject* result = retime_at(tc->events, tc->index, t0);
  Py_DECREF(t0);
  return result;
}

PyType_Slot kTimedCopySlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(timed_copy_dealloc)},
    {Py_tp_call, reinterpret_cast<void*>(timed_copy_call)},
    {Py_tp_traverse, reinterpret_cast<void*>(timed_copy_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(timed_copy_clear)},
    {Py_tp_doc, const_cast<char*>("a GM copy issued to an asynchronous pipe: the copy, then its record timed")},
    {0, nullptr},
};
PyType_Spec kTimedCopySpec = {"_mpnpu_native_trace.TimedCopy", sizeof(TimedCopy), 0,
                              Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                              kTimedCopySlots};
PyTypeObject* g_timed_copy_type = nullptr;  // (made from kTimedCopySpec when the module loads)

// traced_copy(c, kind, t, site, pipe, copy): kcontext.traced_copy, the record of a GM copy issued to an
// asynchronous pipe (t0 = t1 = 0, its times given when it runs) appended to c.events, and what the pipe
// is to run: ``copy``, then the record timed.
PyObject* traced_copy(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (!configured()) return nullptr;
  if (nargs != 6) {
    PyErr_SetString(PyExc_TypeError, "traced_copy(c, kind, t, site, pipe, copy)");
    return nullptr;
  }
  PyObject* c = args[0];
  PyObject* events = PyObject_GetAttr(c, s_events);
  if (events == nullptr) return nullptr;
  if (!PyList_Check(events)) {
    Py_DECREF(events);
    PyErr_SetString(PyExc_TypeError, "traced_copy: the launch is not traced (c.events is not a list)");
    return nullptr;
  }
  const int64_t t = now_ns();
  PyObject* aware = PyObject_GetAttr(c, s_pipe_aware);
  const int on = aware == nullptr ? -1 : PyObject_IsTrue(aware);
  Py_XDECREF(aware);
  PyObject* value = on < 0 ? nullptr : PyObject_GetAttr(args[4], s_value);
  PyObject* record = nullptr;
  if (value != nullptr) {
    PyObject* const given[7] = {c, args[1], args[2], g_zero, args[3], on ? value : g_empty, value};
    record = gm_access(nullptr, given, 7);
    Py_DECREF(value);
  }
  TimedCopy* tc = nullptr;
  const Py_ssize_t index = PyList_GET_SIZE(events);
  if (record != nullptr && PyList_Append(events, record) == 0) {
    tc = PyObject_GC_New(TimedCopy, g_timed_copy_type);
    if (tc != nullptr) {
      Py_INCREF(args[5]);
      tc->copy = args[5];
      tc->events = events;  // (the reference taken above)
      tc->index = index;
      events = nullptr;
      PyObject_GC_Track(reinterpret_cast<PyObject*>(tc));
    }
  }
  Py_XDECREF(record);
  Py_XDECREF(events);
  if (tc == nullptr) return nullptr;
  if (add_observed(c, now_ns() - t) < 0) {
    Py_DECREF(tc);
    return nullptr;
  }
  return reinterpret_cast<PyObject*>(tc);
}

// columns(time_slots, events): EventColumns.pack's grouping, before its pickle: (types, codes, plain,
// stamps), where types are the events' types in order of first appearance, codes a byte per event
// (the index of its type), plain per type a tuple of its columns less t0 and t1, stamps per type its
// (t0 column, t1 column) as little-endian int64 bytes, or None; time_slots(type) gives (index of t0,
// index of t1) or None.
PyObject* columns(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyList_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "columns(time_slots, events: list)");
    return nullptr;
  }
  PyObject* events = args[1];
  const Py_ssize_t n = PyList_GET_SIZE(events);
  PyTypeObject* types[256];
  PyObject* rows[256];  // per type: a list of its events
  int n_types = 0;
  PyObject* codes = PyBytes_FromStringAndSize(nullptr, n);
  if (codes == nullptr) return nullptr;
  char* code = PyBytes_AS_STRING(codes);
  PyObject* result = nullptr;
  int last = -1;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* ev = PyList_GET_ITEM(events, i);
    PyTypeObject* type = Py_TYPE(ev);
    if (!PyTuple_Check(ev)) {
      PyErr_SetString(PyExc_TypeError, "a trace event must be a NamedTuple");
      goto done;
    }
    int k = last >= 0 && types[last] == type ? last : -1;
    for (int j = 0; k < 0 && j < n_types; ++j) {
      if (types[j] == type) k = j;
    }
    if (k < 0) {
      if (n_types == 256) {
        PyErr_SetString(PyExc_OverflowError, "a trace with more than 256 event types");
        goto done;
      }
      rows[n_types] = PyList_New(0);
      if (rows[n_types] == nullptr) goto done;
      types[n_types] = type;
      k = n_types++;
    }
    last = k;
    if (PyList_Append(rows[k], ev) < 0) goto done;
    code[i] = static_cast<char>(k);
  }
  {
    PyObject* type_tuple = PyTuple_New(n_types);
    PyObject* plain = PyTuple_New(n_types);
    PyObject* stamps = PyTuple_New(n_types);
    if (type_tuple == nullptr || plain == nullptr || stamps == nullptr) {
      Py_XDECREF(type_tuple);
      Py_XDECREF(plain);
      Py_XDECREF(stamps);
      goto done;
    }
    bool ok = true;
    for (int k = 0; ok && k < n_types; ++k) {
      Py_INCREF(types[k]);
      PyTuple_SET_ITEM(type_tuple, k, reinterpret_cast<PyObject*>(types[k]));
      PyObject* r = rows[k];
      const Py_ssize_t count = PyList_GET_SIZE(r);
      const Py_ssize_t width = PyTuple_GET_SIZE(PyList_GET_ITEM(r, 0));
      for (Py_ssize_t i = 1; i < count; ++i) {
        if (PyTuple_GET_SIZE(PyList_GET_ITEM(r, i)) != width) {
          PyErr_SetString(PyExc_TypeError, "trace events of one type differ in length");
          ok = false;
          break;
        }
      }
      PyObject* slots = ok ? PyObject_CallOneArg(args[0], reinterpret_cast<PyObject*>(types[k])) : nullptr;
      if (slots == nullptr) {
        ok = false;
        break;
      }
      Py_ssize_t i0 = -1, i1 = -1;
      if (slots != Py_None) {
        if (!PyArg_ParseTuple(slots, "nn", &i0, &i1) || i0 < 0 || i1 < 0 || i0 >= width || i1 >= width) {
          if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "time slots outside the event");
          Py_DECREF(slots);
          ok = false;
          break;
        }
      }
      Py_DECREF(slots);
      const Py_ssize_t kept = width - (i0 >= 0 ? 2 : 0);
      PyObject* cols = PyTuple_New(kept);
      PyObject* times[2] = {nullptr, nullptr};
      if (cols == nullptr) {
        ok = false;
        break;
      }
      for (Py_ssize_t j = 0, at = 0; ok && j < width; ++j) {
        if (j == i0 || j == i1) {
          PyObject* stamp = int64_column(r, j);
          times[j == i0 ? 0 : 1] = stamp;
          ok = stamp != nullptr;
          continue;
        }
        PyObject* col = PyTuple_New(count);
        if (col == nullptr) {
          ok = false;
          break;
        }
        for (Py_ssize_t i = 0; i < count; ++i) {
          PyObject* item = PyTuple_GET_ITEM(PyList_GET_ITEM(r, i), j);
          Py_INCREF(item);
          PyTuple_SET_ITEM(col, i, item);
        }
        PyTuple_SET_ITEM(cols, at++, col);
      }
      if (!ok) {
        Py_DECREF(cols);
        Py_XDECREF(times[0]);
        Py_XDECREF(times[1]);
        break;
      }
      PyTuple_SET_ITEM(plain, k, cols);
      if (i0 >= 0) {
        PyObject* pair = PyTuple_Pack(2, times[0], times[1]);
        Py_DECREF(times[0]);
        Py_DECREF(times[1]);
        if (pair == nullptr) {
          ok = false;
          break;
        }
        PyTuple_SET_ITEM(stamps, k, pair);
      } else {
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(stamps, k, Py_None);
      }
    }
    if (ok) {
      Py_INCREF(codes);
      result = PyTuple_Pack(4, type_tuple, codes, plain, stamps);
      Py_DECREF(codes);
    }
    Py_DECREF(type_tuple);
    Py_DECREF(plain);
    Py_DECREF(stamps);
  }
done:
  for (int k = 0; k < n_types; ++k) Py_DECREF(rows[k]);
  Py_DECREF(codes);
  return result;
}

// configure(prefixes, sites, site_prefix, LocalAccess, PipeSyncEvent, Access, byte_ranges)
PyObject* configure(PyObject*, PyObject* args) {
  PyObject *prefixes, *sites, *site_prefix, *local_access, *pipe_sync, *access, *byte_ranges;
  if (!PyArg_ParseTuple(args, "O!O!OO!O!O!O", &PyDict_Type, &prefixes, &PyDict_Type, &sites, &site_prefix,
                        &PyType_Type, &local_access, &PyType_Type, &pipe_sync, &PyType_Type, &access, &byte_ranges)) {
    return nullptr;
  }
  for (PyObject* type : {local_access, pipe_sync, access}) {
    if (!PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type), &PyTuple_Type)) {
      PyErr_SetString(PyExc_TypeError, "the record types must be tuple classes");
      return nullptr;
    }
  }
  Py_INCREF(prefixes);
  Py_INCREF(sites);
  Py_INCREF(site_prefix);
  Py_INCREF(local_access);
  Py_INCREF(pipe_sync);
  Py_XSETREF(g_prefixes, prefixes);
  Py_XSETREF(g_sites, sites);
  Py_XSETREF(g_site_prefix, site_prefix);
  Py_XSETREF(g_local_access, reinterpret_cast<PyTypeObject*>(local_access));
  Py_XSETREF(g_pipe_sync, reinterpret_cast<PyTypeObject*>(pipe_sync));
  Py_INCREF(access);
  Py_INCREF(byte_ranges);
  Py_XSETREF(g_access, reinterpret_cast<PyTypeObject*>(access));
  Py_XSETREF(g_byte_ranges, byte_ranges);
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(prefixes, sites, site_prefix, LocalAccess, PipeSyncEvent, Access, byte_ranges): the Python "
     "side's site caches, record types and GM byte ranges"},
    {"call_site", call_site, METH_NOARGS, "kcontext.call_site: the kernel line of the calling frame"},
    {"record_local", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(record_local)), METH_FASTCALL,
     "record_local(c, kind, arr, pipe, site=None): _trace.record_local"},
    {"record_sync", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(record_sync)), METH_FASTCALL,
     "record_sync(c, op, pipe, event, event_id, name, site=None): _trace.record_sync"},
    {"record_sync_pair", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(record_sync_pair)),
     METH_FASTCALL, "record_sync_pair(c, src, dst, event, event_id, name): _trace.record_sync_pair"},
    {"stamp_local", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(stamp_local)), METH_FASTCALL,
     "stamp_local(c, since): _trace.stamp_local"},
    {"retime_access", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(retime_access)), METH_FASTCALL,
     "retime_access(events, index, t0): the GM access record at events[index] timed (t0, now)"},
    {"gm_access", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(gm_access)), METH_FASTCALL,
     "gm_access(c, kind, t, t0, site, pipe='', ran_on=''): kcontext.gm_access"},
    {"traced_copy", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(traced_copy)), METH_FASTCALL,
     "traced_copy(c, kind, t, site, pipe, copy): kcontext.traced_copy"},
    {"columns", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(columns)), METH_FASTCALL,
     "columns(time_slots, events): (types, codes, plain, stamps), EventColumns.pack's grouping"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_mpnpu_native_trace",
    "The Python front end's trace recorder in C (built by mpnpu.runtime.native_trace).", -1, kMethods,
    nullptr, nullptr, nullptr, nullptr,
};

int intern(PyObject** slot, const char* name) {
  *slot = PyUnicode_InternFromString(name);
  return *slot == nullptr ? -1 : 0;
}

}  // namespace

PyMODINIT_FUNC PyInit__mpnpu_native_trace() {
  import_array();
  if (intern(&s_events, "events") < 0 || intern(&s_pipe_aware, "pipe_aware") < 0 || intern(&s_tpipe, "tpipe") < 0 ||
      intern(&s_spans, "_spans") < 0 || intern(&s_stage, "stage") < 0 || intern(&s_pipes, "pipes") < 0 ||
      intern(&s_observed_ns, "observed_ns") < 0 || intern(&s_value, "_value_") < 0 ||
      intern(&g_unknown, "?") < 0 || intern(&s_dtype, "dtype") < 0 || intern(&s_storage, "storage") < 0 ||
      intern(&s_itemsize, "itemsize") < 0 || intern(&s_offset, "offset") < 0 || intern(&s_shape, "shape") < 0 ||
      intern(&s_strides, "strides") < 0 || intern(&s_name, "name") < 0 || intern(&s_segment, "segment") < 0 ||
      intern(&s_root_offset, "root_offset") < 0 || intern(&g_empty, "") < 0 ||
      intern(&g_set, "set") < 0 || intern(&g_wait, "wait") < 0) {
    return nullptr;
  }
  g_timed_copy_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&kTimedCopySpec));
  if (g_timed_copy_type == nullptr) return nullptr;
  g_zero = PyLong_FromLong(0);
  g_ranges = PyDict_New();
  if (g_zero == nullptr || g_ranges == nullptr) return nullptr;
  return PyModule_Create(&kModule);
}
