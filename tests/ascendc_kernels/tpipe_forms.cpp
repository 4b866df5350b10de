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
