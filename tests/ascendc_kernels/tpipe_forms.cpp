// TPipe / TQue forms kernels use (our own kernels): a TPipe member assigned from the entry's pipe,
// queues declared with a TQueConfig, DeQue() with no type, GetTPipePtr() without the namespace,
// TQueSync. out[0:N] = 2 x, out[N:2N] = y + 1.
#include "kernel_operator.h"

// Written without ``using namespace AscendC`` (GetTPipePtr is outside the namespace).
static __aicore__ inline void WaitScalarAfterMte2() {
    event_t id = static_cast<event_t>(GetTPipePtr()->FetchEventID(AscendC::HardEvent::MTE2_S));
    AscendC::SetFlag<AscendC::HardEvent::MTE2_S>(id);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_S>(id);
}

using namespace AscendC;

constexpr int32_t N = 1024;

#ifndef MPNPU_TEST_BUFFER_NUMBER
#define MPNPU_TEST_BUFFER_NUMBER 1
#endif
#ifndef MPNPU_TEST_BUFFER_LEN
#define MPNPU_TEST_BUFFER_LEN 0
#endif
#ifndef MPNPU_TEST_ND2NZ
#define MPNPU_TEST_ND2NZ false
#endif
constexpr TQueConfig conf = {MPNPU_TEST_ND2NZ, false, false, MPNPU_TEST_BUFFER_LEN, MPNPU_TEST_BUFFER_NUMBER, 0, {}};

// Keeps a pipe of its own, assigned from the entry's (the two are then one pipe).
class Doubler {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR out, TPipe& pipeIn, uint32_t inBytes) {
        pipe = pipeIn;
        xg.SetGlobalBuffer((__gm__ float*)x, N);
        og.SetGlobalBuffer((__gm__ float*)out, N);
        pipe.InitBuffer(inQue, 1, inBytes);  // member pipe InitBuffer
        pipe.InitBuffer(outQue, 1, N * sizeof(float));
    }
    __aicore__ inline void Process() {
        LocalTensor<float> a = inQue.AllocTensor<float>();
        DataCopy(a, xg, N);
        inQue.EnQue(a);
        inQue.DeQue();  // no type: only waits for the copy
        LocalTensor<float> b = outQue.AllocTensor<float>();
        Muls(b, a, 2.0f, N);  // reads a after the untyped DeQue
        outQue.EnQue(b);
        inQue.FreeTensor(a);
        b = outQue.DeQue<float>();
        DataCopy(og, b, N);
        outQue.FreeTensor(b);
    }

private:
    TPipe pipe;
    TQue<QuePosition::VECIN, 1, &conf> inQue;
    TQue<QuePosition::VECOUT, 1, &conf> outQue;
    GlobalTensor<float> xg, og;
};

#ifndef MPNPU_TEST_FIRST_BYTES
#define MPNPU_TEST_FIRST_BYTES (N * sizeof(float))
#endif

extern "C" __global__ __aicore__ void forms(GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    TPipe pipe;
    // Taken through the entry's pipe before the member is assigned: the member's buffers come after.
    TBuf<TPosition::VECCALC> first;
    pipe.InitBuffer(first, MPNPU_TEST_FIRST_BYTES);  // entry pipe InitBuffer
    LocalTensor<float> c = first.Get<float>(N);
    GlobalTensor<float> yg, og;
    yg.SetGlobalBuffer((__gm__ float*)y, N);
    og.SetGlobalBuffer((__gm__ float*)out, 2 * N);
    DataCopy(c, yg, N);
    WaitScalarAfterMte2();
    TEventID e = GetTPipePtr()->AllocEventID<HardEvent::MTE2_V>();
    SetFlag<HardEvent::MTE2_V>(e);
    WaitFlag<HardEvent::MTE2_V>(e);
    GetTPipePtr()->ReleaseEventID<HardEvent::MTE2_V>(e);
    Doubler op;
    op.Init(x, out, pipe, N * sizeof(float));
    op.Process();
    Adds(c, c, 1.0f, N);  // c's bytes must not be the member's queue buffers
    TEventID f = AscendC::GetTPipePtr()->AllocEventID<HardEvent::V_MTE3>();
    TQueSync<PIPE_V, PIPE_MTE3> sync;
    sync.SetFlag(f);
    sync.WaitFlag(f);  // the TQueSync wait
    GetTPipePtr()->ReleaseEventID<HardEvent::V_MTE3>(f);
    DataCopy(og[N], c, N);
}

// DeQue() with nothing enqueued: an error at its line.
extern "C" __global__ __aicore__ void empty_deque(GM_ADDR x) {
    (void)x;
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> que;
    pipe.InitBuffer(que, 1, 256);
    LocalTensor<float> a = que.AllocTensor<float>();
    que.DeQue();  // nothing enqueued
    que.FreeTensor(a);
}

// A TQueSync between two pipes no event joins: an error at the SetFlag line.
extern "C" __global__ __aicore__ void bad_sync(GM_ADDR x) {
    (void)x;
    TPipe pipe;
    TQueSync<PIPE_MTE3, PIPE_M> sync;
    sync.SetFlag(0);  // no MTE3_M event
}

// A TBuf view longer than its buffer: the device does not check the view, only accesses matter.
// out[0:64] = x[0:64] + 1 through a 256-byte buffer taken as a view of MPNPU_TEST_VIEW floats;
// MPNPU_TEST_TOUCH floats of it are written.
#ifndef MPNPU_TEST_VIEW
#define MPNPU_TEST_VIEW 128
#endif
#ifndef MPNPU_TEST_TOUCH
#define MPNPU_TEST_TOUCH 64
#endif
extern "C" __global__ __aicore__ void long_view(GM_ADDR x, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> small;
    pipe.InitBuffer(small, 64 * sizeof(float));
    TBuf<TPosition::VECCALC> other;
    pipe.InitBuffer(other, 64 * sizeof(float));
    LocalTensor<float> v = small.GetWithOffset<float>(MPNPU_TEST_VIEW, 0);  // the long view
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    DataCopy(v, xg, 64);
    PipeBarrier<PIPE_ALL>();
    Adds(v, v, 1.0f, MPNPU_TEST_TOUCH);  // the access
    PipeBarrier<PIPE_ALL>();
    DataCopy(og, v, 64);
}

#ifndef MPNPU_TEST_MISUSE
#define MPNPU_TEST_MISUSE 0
#endif

// A mix kernel that sets up all its buffers on every core, as one Init shared by both kinds of core
// does: InitBuffer only assigns addresses, so the cube core may take VECIN / VECCALC buffers and the
// vector cores an A1 queue. Each core then uses only its own; out = 2 x on the vector cores.
// MPNPU_TEST_MISUSE 1: the cube core allocates from its VECIN queue; 2: it takes the VECCALC TBuf;
// 3: a vector core allocates from the A1 queue. Each is an error at that line.
extern "C" __global__ __aicore__ void shared_init(GM_ADDR x, GM_ADDR out) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> inQue;
    TBuf<TPosition::VECCALC> work;
    TQue<QuePosition::A1, 1> l1Que;
    pipe.InitBuffer(inQue, 1, N * sizeof(float));
    pipe.InitBuffer(work, N * sizeof(float));
    pipe.InitBuffer(l1Que, 1, 512);
    if ASCEND_IS_AIC {
        if (MPNPU_TEST_MISUSE == 1) {
            LocalTensor<float> bad = inQue.AllocTensor<float>();  // VECIN on the cube core
            inQue.FreeTensor(bad);
        }
        if (MPNPU_TEST_MISUSE == 2) {
            LocalTensor<float> bad = work.Get<float>();  // VECCALC on the cube core
            (void)bad;
        }
        LocalTensor<half> l1 = l1Que.AllocTensor<half>();
        l1Que.FreeTensor(l1);
        return;
    }
    if (MPNPU_TEST_MISUSE == 3) {
        LocalTensor<half> bad = l1Que.AllocTensor<half>();  // A1 on a vector core
        l1Que.FreeTensor(bad);
    }
    uint32_t n = N / GetBlockNum() / GetTaskRation();
    uint32_t at = GetBlockIdx() * n;
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x + at, n);
    og.SetGlobalBuffer((__gm__ float*)out + at, n);
    LocalTensor<float> a = inQue.AllocTensor<float>();
    DataCopy(a, xg, n);
    inQue.EnQue(a);
    LocalTensor<float> b = work.Get<float>();
    Muls(b, inQue.DeQue<float>(), 2.0f, n);  // the dequeued tensor is a's buffer
    inQue.FreeTensor(a);
    TEventID e = GetTPipePtr()->FetchEventID(HardEvent::V_MTE3);
    SetFlag<HardEvent::V_MTE3>(e);
    WaitFlag<HardEvent::V_MTE3>(e);
    DataCopy(og, b, n);
}
