// A WaitFlag whose destination pipe is asynchronous (MTE2) is queued on that pipe; no SetFlag ever
// raises its event, so the pipe would wait for ever: the error must name this line and function.
#include "kernel_operator.h"

using namespace AscendC;

__aicore__ inline void WaitNeverSet() {
    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID1);  // the wait no set satisfies
}

extern "C" __global__ __aicore__ void queued_wait(GM_ADDR x) {
    (void)x;
    WaitNeverSet();
    PipeBarrier<PIPE_ALL>();
}
