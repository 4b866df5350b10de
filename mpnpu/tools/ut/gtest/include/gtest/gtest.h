// mpnpu's own test framework with GoogleTest's spelling, for running an operator repository's kernel
// unit tests unchanged (mpnpu ut). Written from GoogleTest's documented behaviour; it is not GoogleTest.
//
// What a test file may use: TEST, TEST_F, TEST_P with INSTANTIATE_TEST_SUITE_P / INSTANTIATE_TEST_CASE_P
// (testing::Values, ValuesIn, Range, Bool; an optional name generator), testing::Test (SetUp, TearDown,
// SetUpTestSuite / SetUpTestCase, TearDownTestSuite / TearDownTestCase), testing::TestWithParam and
// GetParam(), the EXPECT_* / ASSERT_* assertions (boolean, comparison, floating point, C string, exception),
// FAIL, ADD_FAILURE, SUCCEED, GTEST_SKIP, SCOPED_TRACE, messages streamed into any of them (<< "why"),
// testing::Environment, InitGoogleTest (--gtest_filter, --gtest_list_tests, --gtest_also_run_disabled_tests,
// --gtest_fail_fast; GTEST_FILTER and GTEST_FAIL_FAST in the environment)
// and RUN_ALL_TESTS. The output has GoogleTest's form ([ RUN      ], [       OK ], [  FAILED  ], ...).
//
// Unlike GoogleTest, each test runs in a process of its own, forked from the program after its suite's
// SetUpTestSuite: a test that ends its process (mpnpu ending a launch on a memcheck report, exit status
// 3; a crash) fails, and the program goes on to the next test. A test that finishes hands the CPU-debug
// settings it left (SetKernelMode, ICPU_SET_TILING_KEY) back to the program, so the tests after it
// start with them as they would in one process. The environment changes that:
//   MPNPU_GTEST_FORK=0       run every test in the program's own process, as GoogleTest does
//   MPNPU_GTEST_TIMEOUT=S    fail a test still running after S seconds (SIGTERM, then SIGKILL 10 s later)
//   MPNPU_GTEST_STATES=...   the CPU-debug settings named tests start with (start_state, below)
// Each test runs with MPNPU_GTEST_TEST (its name) and MPNPU_GTEST_TEST_STATE (its starting settings) set.
#ifndef MPNPU_GTEST_GTEST_H
#define MPNPU_GTEST_GTEST_H

#include <signal.h>
#include <sys/types.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace testing {

// Text streamed into an assertion (EXPECT_EQ(a, b) << "why").
class Message {
public:
    Message() = default;
    Message(const Message& other) { text_ << other.text_.str(); }
    template <typename T>
    Message& operator<<(const T& value) {
        text_ << value;
        return *this;
    }
    Message& operator<<(std::ostream& (*manipulator)(std::ostream&)) {
        text_ << manipulator;
        return *this;
    }
    std::string GetString() const { return text_.str(); }

private:
    std::ostringstream text_;
};

class Test;

}  // namespace testing

namespace mpnpu_gtest {

// -- printing values as a failure shows them ---------------------------------------------------------------

template <typename T, typename = void>
struct streamable : std::false_type {};
template <typename T>
struct streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <typename T>
std::string show(const T& value) {
    std::ostringstream out;
    using U = std::decay_t<T>;
    if constexpr (std::is_same_v<U, bool>) {
        out << (value ? "true" : "false");
    } else if constexpr (std::is_same_v<U, char> || std::is_same_v<U, signed char> ||
                         std::is_same_v<U, unsigned char>) {
        out << static_cast<int>(value);
    } else if constexpr (std::is_same_v<U, std::nullptr_t>) {
        out << "(nullptr)";
    } else if constexpr (std::is_enum_v<U> && !streamable<U>::value) {
        out << static_cast<long long>(value);
    } else if constexpr (std::is_same_v<U, const char*> || std::is_same_v<U, char*>) {
        if (value == nullptr) out << "NULL";
        else out << '"' << value << '"';
    } else if constexpr (std::is_same_v<U, std::string>) {
        out << '"' << value << '"';
    } else if constexpr (std::is_pointer_v<U>) {
        if (value == nullptr) out << "NULL";
        else out << static_cast<const void*>(value);
    } else if constexpr (std::is_floating_point_v<U>) {
        out.precision(std::is_same_v<U, float> ? 9 : 17);
        out << value;
    } else if constexpr (streamable<U>::value) {
        out << value;
    } else {
        const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&value);
        out << sizeof(U) << "-byte object <";
        char hex[4];
        for (size_t i = 0; i < sizeof(U); ++i) {
            std::snprintf(hex, sizeof hex, "%02X", bytes[i]);
            out << (i ? " " : "") << hex;
        }
        out << ">";
    }
    return out.str();
}

// -- what one test (in this process) has recorded ------------------------------------------------------------

struct Record {
    bool failed = false;
    bool fatal = false;
    bool skipped = false;
    std::vector<std::string> traces;  // SCOPED_TRACE, innermost last
};

inline Record& record() {
    static Record r;
    return r;
}

enum class Kind { kNonFatal, kFatal, kSkip, kSuccess };

// Reports one assertion's outcome when the streamed message is assigned to it:
//   return Reporter(...) = ::testing::Message() << "why";
class Reporter {
public:
    Reporter(Kind kind, const char* file, int line, std::string text)
        : kind_(kind), file_(file), line_(line), text_(std::move(text)) {}
    void operator=(const ::testing::Message& message) const {
        std::string extra = message.GetString();
        Record& r = record();
        if (kind_ == Kind::kSuccess) return;
        if (kind_ == Kind::kSkip) {
            r.skipped = true;
            std::printf("%s:%d: Skipped\n%s\n", file_, line_, extra.c_str());
            std::fflush(stdout);
            return;
        }
        r.failed = true;
        if (kind_ == Kind::kFatal) r.fatal = true;
        std::printf("%s:%d: Failure\n%s", file_, line_, text_.c_str());
        if (!extra.empty()) std::printf("%s%s", text_.empty() ? "" : "\n", extra.c_str());
        std::printf("\n");
        if (!r.traces.empty()) {
            std::printf("Google Test trace:\n");
            for (auto it = r.traces.rbegin(); it != r.traces.rend(); ++it) std::printf("%s\n", it->c_str());
        }
        std::printf("\n");
        std::fflush(stdout);
    }

private:
    Kind kind_;
    const char* file_;
    int line_;
    std::string text_;
};

// The outcome of a check: whether it held, and if not what to say.
struct Outcome {
    bool ok;
    std::string text;
    explicit operator bool() const { return ok; }
};

inline Outcome pass() { return Outcome{true, std::string()}; }

inline std::string which_is(const char* expr, const std::string& value) {
    std::string s = std::string("  ") + expr + "\n";
    if (value != expr) s += "    Which is: " + value + "\n";
    return s;
}

template <typename A, typename B>
Outcome check_eq(const char* ea, const char* eb, const A& a, const B& b) {
    if (a == b) return pass();
    std::string text = "Expected equality of these values:\n" + which_is(ea, show(a)) + which_is(eb, show(b));
    text.pop_back();
    return Outcome{false, text};
}

#define MPNPU_GTEST_DEFINE_CMP_(name, op)                                                         \
    template <typename A, typename B>                                                             \
    Outcome name(const char* ea, const char* eb, const A& a, const B& b) {                        \
        if (a op b) return pass();                                                                \
        return Outcome{false, std::string("Expected: (") + ea + ") " #op " (" + eb + "), actual: " + \
                                  show(a) + " vs " + show(b)};                                    \
    }
MPNPU_GTEST_DEFINE_CMP_(check_ne, !=)
MPNPU_GTEST_DEFINE_CMP_(check_lt, <)
MPNPU_GTEST_DEFINE_CMP_(check_le, <=)
MPNPU_GTEST_DEFINE_CMP_(check_gt, >)
MPNPU_GTEST_DEFINE_CMP_(check_ge, >=)
#undef MPNPU_GTEST_DEFINE_CMP_

inline Outcome check_bool(const char* expr, bool value, bool expected) {
    if (value == expected) return pass();
    return Outcome{false, std::string("Value of: ") + expr + "\n  Actual: " + (value ? "true" : "false") +
                              "\nExpected: " + (expected ? "true" : "false")};
}

inline Outcome check_near(const char* ea, const char* eb, const char* eabs, double a, double b, double abs_error) {
    const double diff = std::fabs(a - b);
    if (diff <= abs_error) return pass();
    std::ostringstream out;
    out.precision(17);
    out << "The difference between " << ea << " and " << eb << " is " << diff << ", which exceeds " << eabs
        << ", where\n"
        << ea << " evaluates to " << a << ",\n"
        << eb << " evaluates to " << b << ", and\n"
        << eabs << " evaluates to " << abs_error << ".";
    return Outcome{false, out.str()};
}

// Within 4 units in the last place (what GoogleTest's FLOAT_EQ and DOUBLE_EQ accept); NaN equals nothing.
template <typename F, typename Bits>
bool almost_equal(F a, F b) {
    if (std::isnan(a) || std::isnan(b)) return false;
    Bits ia, ib;
    std::memcpy(&ia, &a, sizeof a);
    std::memcpy(&ib, &b, sizeof b);
    const Bits sign = Bits(1) << (sizeof(Bits) * 8 - 1);
    // sign-and-magnitude to a monotonic unsigned scale
    ia = (ia & sign) ? ~ia + 1 : ia | sign;
    ib = (ib & sign) ? ~ib + 1 : ib | sign;
    return (ia >= ib ? ia - ib : ib - ia) <= 4;
}

template <typename F>
Outcome check_float_eq(const char* ea, const char* eb, F a, F b) {
    bool ok = std::is_same_v<F, float> ? almost_equal<float, uint32_t>(float(a), float(b))
                                       : almost_equal<double, uint64_t>(double(a), double(b));
    if (ok) return pass();
    std::string text = "Expected equality of these values:\n" + which_is(ea, show(a)) + which_is(eb, show(b));
    text.pop_back();
    return Outcome{false, text};
}

inline Outcome check_str(const char* ea, const char* eb, const char* a, const char* b, bool equal, bool nocase) {
    bool same;
    if (a == nullptr || b == nullptr) same = a == b;
    else same = nocase ? strcasecmp(a, b) == 0 : std::strcmp(a, b) == 0;
    if (same == equal) return pass();
    if (equal) {
        std::string text = std::string("Expected equality of these values:\n") + which_is(ea, show(a)) +
                           which_is(eb, show(b)) + (nocase ? "Ignoring case" : "");
        if (!nocase) text.pop_back();
        return Outcome{false, text};
    }
    return Outcome{false, std::string("Expected: (") + ea + ") != (" + eb + ")" + (nocase ? " (ignoring case)" : "") +
                              ", actual: " + show(a) + " vs " + show(b)};
}

// -- registered tests ----------------------------------------------------------------------------------------

using Factory = std::function<::testing::Test*()>;

struct TestEntry {
    std::string suite;
    std::string name;
    std::string param;  // the parameter's text for a value-parameterized test
    Factory make;
    void (*suite_setup)();
    void (*suite_teardown)();
    const char* file;
    int line;
};

inline std::vector<TestEntry>& tests() {
    static std::vector<TestEntry> all;
    return all;
}

// Expanders of value-parameterized suites: each adds its tests when RUN_ALL_TESTS starts.
inline std::vector<std::function<void()>>& expanders() {
    static std::vector<std::function<void()>> all;
    return all;
}

inline bool add_test(const char* suite, const char* name, Factory make, void (*setup)(), void (*teardown)(),
                     const char* file, int line) {
    tests().push_back(TestEntry{suite, name, std::string(), std::move(make), setup, teardown, file, line});
    return true;
}

}  // namespace mpnpu_gtest

namespace testing {

class Test {
public:
    virtual ~Test() = default;
    static void SetUpTestSuite() {}
    static void TearDownTestSuite() {}
    static void SetUpTestCase() {}
    static void TearDownTestCase() {}
    static bool HasFailure() { return mpnpu_gtest::record().failed; }
    static bool HasFatalFailure() { return mpnpu_gtest::record().fatal; }
    static bool HasNonfatalFailure() { return HasFailure() && !HasFatalFailure(); }
    static bool IsSkipped() { return mpnpu_gtest::record().skipped; }
    static void RecordProperty(const std::string&, const std::string&) {}
    static void RecordProperty(const std::string&, long long) {}
    virtual void TestBody() = 0;

    // GoogleTest's order: SetUp; the body unless SetUp failed fatally or skipped; TearDown.
    void Run() {
        SetUp();
        if (!HasFatalFailure() && !IsSkipped()) TestBody();
        TearDown();
    }

protected:
    Test() = default;
    virtual void SetUp() {}
    virtual void TearDown() {}
};

class Environment {
public:
    virtual ~Environment() = default;
    virtual void SetUp() {}
    virtual void TearDown() {}
};

inline std::vector<Environment*>& environments() {
    static std::vector<Environment*> all;
    return all;
}

inline Environment* AddGlobalTestEnvironment(Environment* env) {
    environments().push_back(env);
    return env;
}

template <typename T>
class WithParamInterface {
public:
    using ParamType = T;
    virtual ~WithParamInterface() = default;
    static const ParamType& GetParam() { return *slot(); }
    static const ParamType*& slot() {
        static const ParamType* current = nullptr;
        return current;
    }
};

template <typename T>
class TestWithParam : public Test, public WithParamInterface<T> {};

template <typename T>
struct TestParamInfo {
    TestParamInfo(const T& p, size_t i) : param(p), index(i) {}
    T param;
    size_t index;
};

// Parameter generators: each becomes a list of the suite's parameter type when the suite is instantiated.
template <typename... Ts>
struct ValueList {
    std::tuple<Ts...> values;
    template <typename P>
    std::vector<P> as() const {
        return std::apply([](const Ts&... v) { return std::vector<P>{static_cast<P>(v)...}; }, values);
    }
};

template <typename... Ts>
ValueList<std::decay_t<Ts>...> Values(Ts&&... values) {
    return ValueList<std::decay_t<Ts>...>{std::make_tuple(std::forward<Ts>(values)...)};
}

template <typename T>
struct ValueVector {
    std::vector<T> values;
    template <typename P>
    std::vector<P> as() const {
        return std::vector<P>(values.begin(), values.end());
    }
};

template <typename It>
ValueVector<typename std::iterator_traits<It>::value_type> ValuesIn(It begin, It end) {
    return {std::vector<typename std::iterator_traits<It>::value_type>(begin, end)};
}
template <typename T, size_t N>
ValueVector<T> ValuesIn(const T (&array)[N]) {
    return {std::vector<T>(array, array + N)};
}
template <typename C>
ValueVector<typename C::value_type> ValuesIn(const C& container) {
    return {std::vector<typename C::value_type>(container.begin(), container.end())};
}

template <typename T, typename S = T>
ValueVector<T> Range(T begin, T end, S step = 1) {
    ValueVector<T> out;
    for (T v = begin; v < end; v = static_cast<T>(v + step)) out.values.push_back(v);
    return out;
}

inline ValueVector<bool> Bool() { return {{false, true}}; }

inline std::string PrintToString(const std::string& s) { return mpnpu_gtest::show(s); }
template <typename T>
std::string PrintToString(const T& value) {
    return mpnpu_gtest::show(value);
}

struct PrintToStringParamName {
    template <typename T>
    std::string operator()(const TestParamInfo<T>& info) const {
        return PrintToString(info.param);
    }
};

void InitGoogleTest(int* argc, char** argv);
void InitGoogleTest();

}  // namespace testing

namespace mpnpu_gtest {

// Which of a fixture's suite hooks to run: the *TestSuite one if the fixture defines it, else *TestCase.
// (A class derived from the fixture may name them when the fixture declares them protected.)
template <typename F>
struct Hooks : F {
    static void (*setup())() {
        if (&Hooks::SetUpTestSuite != &::testing::Test::SetUpTestSuite) return &Hooks::SetUpTestSuite;
        return &Hooks::SetUpTestCase;
    }
    static void (*teardown())() {
        if (&Hooks::TearDownTestSuite != &::testing::Test::TearDownTestSuite) return &Hooks::TearDownTestSuite;
        return &Hooks::TearDownTestCase;
    }
};

// A value-parameterized suite: its TEST_P patterns and its instantiations.
template <typename Suite>
struct ParamSuite {
    using P = typename Suite::ParamType;
    struct Pattern {
        std::string name;
        Factory make;
        const char* file;
        int line;
    };
    struct Instance {
        std::string prefix;
        std::function<std::vector<P>()> values;
        std::function<std::string(const ::testing::TestParamInfo<P>&)> namer;
    };
    static std::vector<Pattern>& patterns() {
        static std::vector<Pattern> all;
        return all;
    }
    static std::vector<Instance>& instances() {
        static std::vector<Instance> all;
        return all;
    }
    static void ensure_expander(const char* suite) {
        static bool added = false;
        if (added) return;
        added = true;
        std::string name = suite;
        expanders().push_back([name] { expand(name); });
    }
    static void expand(const std::string& suite) {
        for (const Instance& inst : instances()) {
            auto params = std::make_shared<std::vector<P>>(inst.values());
            for (const Pattern& pat : patterns()) {
                for (size_t i = 0; i < params->size(); ++i) {
                    std::string label = std::to_string(i);
                    if (inst.namer) label = inst.namer(::testing::TestParamInfo<P>((*params)[i], i));
                    std::string full_suite = inst.prefix.empty() ? suite : inst.prefix + "/" + suite;
                    Factory make = [params, i, m = pat.make]() {
                        ::testing::WithParamInterface<P>::slot() = &(*params)[i];
                        return m();
                    };
                    tests().push_back(TestEntry{full_suite, pat.name + "/" + label, ::testing::PrintToString((*params)[i]),
                                                make, Hooks<Suite>::setup(), Hooks<Suite>::teardown(), pat.file,
                                                pat.line});
                }
            }
        }
    }
};

template <typename Suite>
bool add_pattern(const char* suite, const char* name, Factory make, const char* file, int line) {
    ParamSuite<Suite>::ensure_expander(suite);
    ParamSuite<Suite>::patterns().push_back({name, std::move(make), file, line});
    return true;
}

template <typename Suite, typename Gen>
bool add_instance(const char* prefix, const char* suite, const Gen& gen) {
    using P = typename Suite::ParamType;
    ParamSuite<Suite>::ensure_expander(suite);
    ParamSuite<Suite>::instances().push_back({prefix, [gen] { return gen.template as<P>(); }, nullptr});
    return true;
}

template <typename Suite, typename Gen, typename Namer>
bool add_instance(const char* prefix, const char* suite, const Gen& gen, Namer namer) {
    using P = typename Suite::ParamType;
    ParamSuite<Suite>::ensure_expander(suite);
    ParamSuite<Suite>::instances().push_back(
        {prefix, [gen] { return gen.template as<P>(); },
         [namer](const ::testing::TestParamInfo<P>& info) { return std::string(namer(info)); }});
    return true;
}

// A SCOPED_TRACE: its message is shown with every failure inside its scope.
class Trace {
public:
    template <typename T>
    Trace(const char* file, int line, const T& message) {
        std::ostringstream out;
        out << file << ":" << line << ": " << message;
        record().traces.push_back(out.str());
    }
    ~Trace() { record().traces.pop_back(); }
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;
};

// -- the run ------------------------------------------------------------------------------------------------

struct Options {
    std::string filter = "*";
    bool list = false;
    bool disabled = false;
    bool fail_fast = false;  // --gtest_fail_fast / GTEST_FAIL_FAST: the tests after a failed one are skipped
};

inline Options& options() {
    static Options o;
    return o;
}

inline bool glob_match(const char* pattern, const char* text) {
    if (*pattern == '\0') return *text == '\0';
    if (*pattern == '*') return glob_match(pattern + 1, text) || (*text && glob_match(pattern, text + 1));
    if (*text == '\0') return false;
    return (*pattern == '?' || *pattern == *text) && glob_match(pattern + 1, text + 1);
}

inline bool any_match(const std::string& patterns, const std::string& name) {
    size_t start = 0;
    while (start <= patterns.size()) {
        size_t end = patterns.find(':', start);
        if (end == std::string::npos) end = patterns.size();
        std::string one = patterns.substr(start, end - start);
        if (!one.empty() && glob_match(one.c_str(), name.c_str())) return true;
        start = end + 1;
    }
    return false;
}

// --gtest_filter=POSITIVE[-NEGATIVE], each a ':'-separated list of patterns with * and ?.
inline bool selected(const std::string& full) {
    const std::string& f = options().filter;
    size_t dash = f.find('-');
    std::string pos = dash == std::string::npos ? f : f.substr(0, dash);
    std::string neg = dash == std::string::npos ? std::string() : f.substr(dash + 1);
    if (pos.empty()) pos = "*";
    return any_match(pos, full) && !any_match(neg, full);
}

inline bool disabled(const TestEntry& t) {
    auto starts = [](const std::string& s) { return s.rfind("DISABLED_", 0) == 0; };
    std::string bare_suite = t.suite.substr(t.suite.find('/') == std::string::npos ? 0 : t.suite.find('/') + 1);
    return starts(t.name) || starts(bare_suite);
}

inline std::string plural(size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

enum class Result { kPassed, kFailed, kSkipped };

// One test in this process: its fixture made, run and destroyed; C++ exceptions it lets out fail it.
inline Result run_here(const TestEntry& t) {
    record() = Record();
    try {
        std::unique_ptr<::testing::Test> fixture(t.make());
        fixture->Run();
    } catch (const std::exception& e) {
        Reporter(Kind::kNonFatal, t.file, t.line,
                 std::string("C++ exception with description \"") + e.what() + "\" thrown in the test body.") =
            ::testing::Message();
    } catch (...) {
        Reporter(Kind::kNonFatal, t.file, t.line, "Unknown C++ exception thrown in the test body.") =
            ::testing::Message();
    }
    if (record().failed) return Result::kFailed;
    return record().skipped ? Result::kSkipped : Result::kPassed;
}

inline double timeout_seconds() {
    const char* v = std::getenv("MPNPU_GTEST_TIMEOUT");
    return v ? std::atof(v) : 0.0;
}

// The CPU-debug library's host settings (the last SetKernelMode and ICPU_SET_TILING_KEY), when the program
// links it: in one GoogleTest process a test's settings are there for the tests after it, and unit tests
// rely on that (a test that launches without SetKernelMode of its own), so a forked test hands them back.
extern "C" void mpnpu_cpudebug_host_state(int32_t* mode, uint64_t* key) __attribute__((weak));
extern "C" void mpnpu_cpudebug_set_kernel_mode(int32_t mode) __attribute__((weak));
extern "C" void mpnpu_cpudebug_set_tiling_key(uint64_t key) __attribute__((weak));

struct HostState {
    int32_t mode = -1;
    uint64_t key = 0;
};

inline bool has_host_state() {
    return mpnpu_cpudebug_host_state && mpnpu_cpudebug_set_kernel_mode && mpnpu_cpudebug_set_tiling_key;
}

// What the program's launches log (MPNPU_SYNC_LOG) of the test running now: its name and the CPU-debug
// settings it started with. Mutation testing learns from them which tests execute a sync point, and
// runs only those for that point, each started with those settings.
inline void announce(const TestEntry& t) {
    const std::string name = t.suite + "." + t.name;
    setenv("MPNPU_GTEST_TEST", name.c_str(), 1);
    if (!has_host_state()) return;
    HostState hs;
    mpnpu_cpudebug_host_state(&hs.mode, &hs.key);
    char state[48];
    std::snprintf(state, sizeof state, "%d:%llu", int(hs.mode), (unsigned long long)hs.key);
    setenv("MPNPU_GTEST_TEST_STATE", state, 1);
}

// MPNPU_GTEST_STATES="Suite.Name=MODE:KEY;...": the settings a named test starts with. A run of some of
// the tests gives each the settings it found in the run of them all (a test may rely on those an earlier
// test left).
inline void start_state(const TestEntry& t) {
    const char* all = std::getenv("MPNPU_GTEST_STATES");
    if (!all || !has_host_state()) return;
    const std::string want = t.suite + "." + t.name + "=";
    const std::string text = all;
    for (size_t at = 0; at < text.size();) {
        size_t end = text.find(';', at);
        if (end == std::string::npos) end = text.size();
        if (text.compare(at, want.size(), want) == 0) {
            int mode = 0;
            unsigned long long key = 0;
            if (std::sscanf(text.c_str() + at + want.size(), "%d:%llu", &mode, &key) == 2) {
                mpnpu_cpudebug_set_kernel_mode(int32_t(mode));
                mpnpu_cpudebug_set_tiling_key(uint64_t(key));
            }
            return;
        }
        at = end + 1;
    }
}

inline bool forking() {
    const char* v = std::getenv("MPNPU_GTEST_FORK");
    return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "no") == 0 || std::strcmp(v, "off") == 0));
}

// One test in a forked process: whatever ends that process (an exit, a signal, the timeout) fails the
// test alone. The child reports its result as one byte through a pipe.
inline Result run_forked(const TestEntry& t) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::cout.flush();
    std::cerr.flush();
    int fds[2];
    if (pipe(fds) != 0) return run_here(t);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return run_here(t);
    }
    if (pid == 0) {
        close(fds[0]);
        Result r = run_here(t);
        char msg[1 + sizeof(HostState)] = {r == Result::kPassed ? 'P' : r == Result::kSkipped ? 'S' : 'F'};
        HostState hs;
        if (has_host_state()) mpnpu_cpudebug_host_state(&hs.mode, &hs.key);
        std::memcpy(msg + 1, &hs, sizeof hs);
        std::cout.flush();
        std::fflush(stdout);
        ssize_t n = write(fds[1], msg, sizeof msg);
        (void)n;
        close(fds[1]);
        std::exit(0);  // atexit handlers run: mpnpu ends its core processes and frees its segments
    }
    close(fds[1]);
    const double limit = timeout_seconds();
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    bool timed_out = false, killed = false;
    std::chrono::steady_clock::time_point termed;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0) {
            status = -1;
            break;
        }
        const auto now = std::chrono::steady_clock::now();
        if (limit > 0 && !timed_out && std::chrono::duration<double>(now - start).count() > limit) {
            timed_out = true;
            termed = now;
            kill(pid, SIGTERM);
        } else if (timed_out && !killed && std::chrono::duration<double>(now - termed).count() > 10.0) {
            killed = true;
            kill(pid, SIGKILL);
        }
        usleep(2000);
    }
    char msg[1 + sizeof(HostState)] = {};
    size_t got = 0;
    while (got < sizeof msg) {
        ssize_t n = read(fds[0], msg + got, sizeof msg - got);
        if (n <= 0) break;
        got += size_t(n);
    }
    close(fds[0]);
    if (got == sizeof msg && status == 0) {
        if (has_host_state()) {  // the settings the test left, as if it had run in this process
            HostState hs;
            std::memcpy(&hs, msg + 1, sizeof hs);
            mpnpu_cpudebug_set_kernel_mode(hs.mode);
            mpnpu_cpudebug_set_tiling_key(hs.key);
        }
        const char c = msg[0];
        return c == 'P' ? Result::kPassed : c == 'S' ? Result::kSkipped : Result::kFailed;
    }
    std::fflush(stdout);
    if (timed_out) {
        std::printf("%s:%d: Failure\nthe test was still running after %g s (MPNPU_GTEST_TIMEOUT) and was stopped\n\n",
                    t.file, t.line, limit);
    } else if (status != -1 && WIFSIGNALED(status)) {
        std::printf("%s:%d: Failure\nthe test's process was killed by signal %d (%s)\n\n", t.file, t.line,
                    WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (status != -1 && WIFEXITED(status)) {
        std::printf("%s:%d: Failure\nthe test's process ended with exit status %d before the test finished%s\n\n",
                    t.file, t.line, WEXITSTATUS(status),
                    WEXITSTATUS(status) == 3 ? " (mpnpu stopped it: see its message above)" : "");
    } else {
        std::printf("%s:%d: Failure\nthe test's process was lost\n\n", t.file, t.line);
    }
    std::fflush(stdout);
    return Result::kFailed;
}

inline long long ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

inline std::string shown_name(const TestEntry& t) {
    std::string s = t.suite + "." + t.name;
    if (!t.param.empty()) s += ", where GetParam() = " + t.param;
    return s;
}

inline int run_all() {
    for (auto& expand : expanders()) expand();
    expanders().clear();
    std::vector<const TestEntry*> chosen;
    std::vector<std::string> suites;
    size_t n_disabled = 0;
    for (const TestEntry& t : tests()) {
        if (!selected(t.suite + "." + t.name)) continue;
        if (disabled(t) && !options().disabled) {
            ++n_disabled;
            continue;
        }
        chosen.push_back(&t);
        bool known = false;
        for (const std::string& s : suites) known = known || s == t.suite;
        if (!known) suites.push_back(t.suite);
    }
    if (options().list) {
        for (const std::string& s : suites) {
            std::printf("%s.\n", s.c_str());
            for (const TestEntry* t : chosen)
                if (t->suite == s) std::printf("  %s\n", t->name.c_str());
        }
        return 0;
    }
    const auto all_start = std::chrono::steady_clock::now();
    std::printf("[==========] Running %s from %s.\n", plural(chosen.size(), "test", "tests").c_str(),
                plural(suites.size(), "test suite", "test suites").c_str());
    std::printf("[----------] Global test environment set-up.\n");
    std::fflush(stdout);
    for (::testing::Environment* env : ::testing::environments()) env->SetUp();
    std::vector<const TestEntry*> failed, skipped;
    size_t passed = 0;
    const bool fork_each = forking();
    for (const std::string& s : suites) {
        std::vector<const TestEntry*> here;
        for (const TestEntry* t : chosen)
            if (t->suite == s) here.push_back(t);
        const auto suite_start = std::chrono::steady_clock::now();
        std::printf("[----------] %s from %s\n", plural(here.size(), "test", "tests").c_str(), s.c_str());
        std::fflush(stdout);
        if (here.front()->suite_setup) here.front()->suite_setup();
        for (const TestEntry* t : here) {
            if (options().fail_fast && !failed.empty()) {
                std::printf("[  SKIPPED ] %s (0 ms)\n", shown_name(*t).c_str());
                skipped.push_back(t);
                continue;
            }
            std::printf("[ RUN      ] %s.%s\n", t->suite.c_str(), t->name.c_str());
            std::fflush(stdout);
            start_state(*t);
            announce(*t);
            const auto start = std::chrono::steady_clock::now();
            Result r = fork_each ? run_forked(*t) : run_here(*t);
            const long long ms = ms_since(start);
            const char* tag = r == Result::kPassed ? "[       OK ]" : r == Result::kSkipped ? "[  SKIPPED ]"
                                                                                          : "[  FAILED  ]";
            std::printf("%s %s (%lld ms)\n", tag, shown_name(*t).c_str(), ms);
            std::fflush(stdout);
            if (r == Result::kPassed) ++passed;
            else if (r == Result::kSkipped) skipped.push_back(t);
            else failed.push_back(t);
        }
        if (here.front()->suite_teardown) here.front()->suite_teardown();
        std::printf("[----------] %s from %s (%lld ms total)\n\n", plural(here.size(), "test", "tests").c_str(),
                    s.c_str(), ms_since(suite_start));
        std::fflush(stdout);
    }
    for (auto it = ::testing::environments().rbegin(); it != ::testing::environments().rend(); ++it) (*it)->TearDown();
    std::printf("[----------] Global test environment tear-down\n");
    std::printf("[==========] %s from %s ran. (%lld ms total)\n", plural(chosen.size(), "test", "tests").c_str(),
                plural(suites.size(), "test suite", "test suites").c_str(), ms_since(all_start));
    std::printf("[  PASSED  ] %s.\n", plural(passed, "test", "tests").c_str());
    if (!skipped.empty()) {
        std::printf("[  SKIPPED ] %s, listed below:\n", plural(skipped.size(), "test", "tests").c_str());
        for (const TestEntry* t : skipped) std::printf("[  SKIPPED ] %s.%s\n", t->suite.c_str(), t->name.c_str());
    }
    if (!failed.empty()) {
        std::printf("[  FAILED  ] %s, listed below:\n", plural(failed.size(), "test", "tests").c_str());
        for (const TestEntry* t : failed) std::printf("[  FAILED  ] %s\n", shown_name(*t).c_str());
        std::printf("\n%zu FAILED %s\n", failed.size(), failed.size() == 1 ? "TEST" : "TESTS");
    }
    if (n_disabled) std::printf("  YOU HAVE %zu DISABLED %s\n\n", n_disabled, n_disabled == 1 ? "TEST" : "TESTS");
    std::fflush(stdout);
    return failed.empty() ? 0 : 1;
}

inline void take_flags(int* argc, char** argv) {
    const char* env = std::getenv("GTEST_FILTER");
    if (env) options().filter = env;
    const char* fast = std::getenv("GTEST_FAIL_FAST");
    options().fail_fast = fast && *fast && std::strcmp(fast, "0") != 0;
    if (!argc || !argv) return;
    int kept = 1;
    for (int i = 1; i < *argc; ++i) {
        std::string a = argv[i] ? argv[i] : "";
        if (a.rfind("--gtest_filter=", 0) == 0) {
            options().filter = a.substr(15);
        } else if (a == "--gtest_list_tests") {
            options().list = true;
        } else if (a == "--gtest_also_run_disabled_tests") {
            options().disabled = true;
        } else if (a == "--gtest_fail_fast" || a == "--gtest_fail_fast=1" || a == "--gtest_fail_fast=true") {
            options().fail_fast = true;
        } else if (a.rfind("--gtest_", 0) == 0) {
            // other GoogleTest flags (colour, output files, repeats) are accepted and have no effect here
        } else {
            argv[kept++] = argv[i];
        }
    }
    *argc = kept;
    argv[kept] = nullptr;
}

}  // namespace mpnpu_gtest

namespace testing {
inline void InitGoogleTest(int* argc, char** argv) { mpnpu_gtest::take_flags(argc, argv); }
inline void InitGoogleTest() { mpnpu_gtest::take_flags(nullptr, nullptr); }
}  // namespace testing

inline int RUN_ALL_TESTS() { return mpnpu_gtest::run_all(); }

// -- the macros ---------------------------------------------------------------------------------------------

#define MPNPU_GTEST_CAT_(a, b) MPNPU_GTEST_CAT2_(a, b)
#define MPNPU_GTEST_CAT2_(a, b) a##b
#define MPNPU_GTEST_CLASS_(suite, name) suite##_##name##_Test

#define MPNPU_GTEST_DEFINE_TEST_(suite, name, fixture)                                                          \
    class MPNPU_GTEST_CLASS_(suite, name) : public fixture {                                                   \
    public:                                                                                                      \
        MPNPU_GTEST_CLASS_(suite, name)() = default;                                                             \
        void TestBody() override;                                                                                \
    };                                                                                                           \
    [[maybe_unused]] static const bool MPNPU_GTEST_CAT_(mpnpu_gtest_registered_##suite##_##name##_, __LINE__) =                   \
        ::mpnpu_gtest::add_test(#suite, #name, []() -> ::testing::Test* { return new MPNPU_GTEST_CLASS_(suite, name); }, \
                                ::mpnpu_gtest::Hooks<fixture>::setup(), ::mpnpu_gtest::Hooks<fixture>::teardown(),        \
                                __FILE__, __LINE__);                                                             \
    void MPNPU_GTEST_CLASS_(suite, name)::TestBody()

#define TEST(suite, name) MPNPU_GTEST_DEFINE_TEST_(suite, name, ::testing::Test)
#define TEST_F(fixture, name) MPNPU_GTEST_DEFINE_TEST_(fixture, name, fixture)
#define GTEST_TEST(suite, name) TEST(suite, name)

#define TEST_P(suite, name)                                                                                      \
    class MPNPU_GTEST_CLASS_(suite, name) : public suite {                                                     \
    public:                                                                                                      \
        MPNPU_GTEST_CLASS_(suite, name)() = default;                                                             \
        void TestBody() override;                                                                                \
    };                                                                                                           \
    [[maybe_unused]] static const bool MPNPU_GTEST_CAT_(mpnpu_gtest_pattern_##suite##_##name##_, __LINE__) =                      \
        ::mpnpu_gtest::add_pattern<suite>(#suite, #name,                                                        \
                                          []() -> ::testing::Test* { return new MPNPU_GTEST_CLASS_(suite, name); }, \
                                          __FILE__, __LINE__);                                                   \
    void MPNPU_GTEST_CLASS_(suite, name)::TestBody()

#define INSTANTIATE_TEST_SUITE_P(prefix, suite, ...)                                                             \
    [[maybe_unused]] static const bool MPNPU_GTEST_CAT_(mpnpu_gtest_instance_##prefix##_##suite##_, __LINE__) =                   \
        ::mpnpu_gtest::add_instance<suite>(#prefix, #suite, __VA_ARGS__)
#define INSTANTIATE_TEST_CASE_P(prefix, suite, ...) INSTANTIATE_TEST_SUITE_P(prefix, suite, __VA_ARGS__)

// An assertion: `on_failure` is empty for EXPECT_*, `return` for ASSERT_* (which leaves the function).
#define MPNPU_GTEST_BLOCKER_ \
    switch (0)               \
    case 0:                  \
    default:
#define MPNPU_GTEST_CHECK_(outcome, kind, on_failure)                                            \
    MPNPU_GTEST_BLOCKER_                                                                         \
    if (const ::mpnpu_gtest::Outcome mpnpu_gtest_outcome_ = (outcome))                           \
        ;                                                                                        \
    else                                                                                         \
        on_failure ::mpnpu_gtest::Reporter(kind, __FILE__, __LINE__, mpnpu_gtest_outcome_.text) = \
            ::testing::Message()

#define MPNPU_GTEST_NONFATAL_(outcome) MPNPU_GTEST_CHECK_(outcome, ::mpnpu_gtest::Kind::kNonFatal, )
#define MPNPU_GTEST_FATAL_(outcome) MPNPU_GTEST_CHECK_(outcome, ::mpnpu_gtest::Kind::kFatal, return)

#define EXPECT_TRUE(c) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_bool(#c, static_cast<bool>(c), true))
#define EXPECT_FALSE(c) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_bool(#c, static_cast<bool>(c), false))
#define ASSERT_TRUE(c) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_bool(#c, static_cast<bool>(c), true))
#define ASSERT_FALSE(c) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_bool(#c, static_cast<bool>(c), false))

#define EXPECT_EQ(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_eq(#a, #b, a, b))
#define EXPECT_NE(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_ne(#a, #b, a, b))
#define EXPECT_LT(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_lt(#a, #b, a, b))
#define EXPECT_LE(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_le(#a, #b, a, b))
#define EXPECT_GT(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_gt(#a, #b, a, b))
#define EXPECT_GE(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_ge(#a, #b, a, b))
#define ASSERT_EQ(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_eq(#a, #b, a, b))
#define ASSERT_NE(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_ne(#a, #b, a, b))
#define ASSERT_LT(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_lt(#a, #b, a, b))
#define ASSERT_LE(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_le(#a, #b, a, b))
#define ASSERT_GT(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_gt(#a, #b, a, b))
#define ASSERT_GE(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_ge(#a, #b, a, b))

#define EXPECT_NEAR(a, b, e) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_near(#a, #b, #e, double(a), double(b), double(e)))
#define ASSERT_NEAR(a, b, e) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_near(#a, #b, #e, double(a), double(b), double(e)))
#define EXPECT_FLOAT_EQ(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_float_eq<float>(#a, #b, float(a), float(b)))
#define ASSERT_FLOAT_EQ(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_float_eq<float>(#a, #b, float(a), float(b)))
#define EXPECT_DOUBLE_EQ(a, b) \
    MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_float_eq<double>(#a, #b, double(a), double(b)))
#define ASSERT_DOUBLE_EQ(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_float_eq<double>(#a, #b, double(a), double(b)))

#define EXPECT_STREQ(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, true, false))
#define EXPECT_STRNE(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, false, false))
#define EXPECT_STRCASEEQ(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, true, true))
#define EXPECT_STRCASENE(a, b) MPNPU_GTEST_NONFATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, false, true))
#define ASSERT_STREQ(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, true, false))
#define ASSERT_STRNE(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, false, false))
#define ASSERT_STRCASEEQ(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, true, true))
#define ASSERT_STRCASENE(a, b) MPNPU_GTEST_FATAL_(::mpnpu_gtest::check_str(#a, #b, a, b, false, true))

// Exceptions: `thrown` says what the statement did (0 nothing, 1 the expected type, 2 another).
#define MPNPU_GTEST_THROW_OUTCOME_(statement, catch_expected, want, text)                        \
    ([&]() -> ::mpnpu_gtest::Outcome {                                                           \
        int thrown = 0;                                                                          \
        try {                                                                                    \
            statement;                                                                           \
        } catch_expected catch (...) {                                                           \
            thrown = 2;                                                                          \
        }                                                                                        \
        if (want(thrown)) return ::mpnpu_gtest::pass();                                          \
        return ::mpnpu_gtest::Outcome{false, text};                                              \
    }())
#define MPNPU_GTEST_THROWS_(statement, type)                                                                    \
    MPNPU_GTEST_THROW_OUTCOME_(statement, catch (const type&) { thrown = 1; }, [](int t) { return t == 1; },      \
                               "Expected: " #statement " throws an exception of type " #type ".\n  Actual: it " \
                               "throws nothing or a different type.")
#define MPNPU_GTEST_NO_THROW_(statement)                                                          \
    MPNPU_GTEST_THROW_OUTCOME_(statement, , [](int t) { return t == 0; },                         \
                               "Expected: " #statement " doesn't throw an exception.\n  Actual: it throws.")
#define MPNPU_GTEST_ANY_THROW_(statement)                                                         \
    MPNPU_GTEST_THROW_OUTCOME_(statement, , [](int t) { return t != 0; },                         \
                               "Expected: " #statement " throws an exception.\n  Actual: it doesn't.")
#define EXPECT_THROW(statement, type) MPNPU_GTEST_NONFATAL_(MPNPU_GTEST_THROWS_(statement, type))
#define ASSERT_THROW(statement, type) MPNPU_GTEST_FATAL_(MPNPU_GTEST_THROWS_(statement, type))
#define EXPECT_NO_THROW(statement) MPNPU_GTEST_NONFATAL_(MPNPU_GTEST_NO_THROW_(statement))
#define ASSERT_NO_THROW(statement) MPNPU_GTEST_FATAL_(MPNPU_GTEST_NO_THROW_(statement))
#define EXPECT_ANY_THROW(statement) MPNPU_GTEST_NONFATAL_(MPNPU_GTEST_ANY_THROW_(statement))
#define ASSERT_ANY_THROW(statement) MPNPU_GTEST_FATAL_(MPNPU_GTEST_ANY_THROW_(statement))

// Explicit outcomes.
#define GTEST_FAIL() return ::mpnpu_gtest::Reporter(::mpnpu_gtest::Kind::kFatal, __FILE__, __LINE__, "Failed") = ::testing::Message()
#define FAIL() GTEST_FAIL()
#define ADD_FAILURE() ::mpnpu_gtest::Reporter(::mpnpu_gtest::Kind::kNonFatal, __FILE__, __LINE__, "Failed") = ::testing::Message()
#define ADD_FAILURE_AT(file, line) \
    ::mpnpu_gtest::Reporter(::mpnpu_gtest::Kind::kNonFatal, file, line, "Failed") = ::testing::Message()
#define GTEST_SUCCEED() ::mpnpu_gtest::Reporter(::mpnpu_gtest::Kind::kSuccess, __FILE__, __LINE__, "") = ::testing::Message()
#define SUCCEED() GTEST_SUCCEED()
#define GTEST_SKIP() return ::mpnpu_gtest::Reporter(::mpnpu_gtest::Kind::kSkip, __FILE__, __LINE__, "") = ::testing::Message()

#define SCOPED_TRACE(message) \
    ::mpnpu_gtest::Trace MPNPU_GTEST_CAT_(mpnpu_gtest_trace_, __LINE__)(__FILE__, __LINE__, (message))

#endif  // MPNPU_GTEST_GTEST_H
