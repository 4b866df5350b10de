// Local memory management: TPipe (buffers and event ids), TQue / TQueBind (buffers handed between
// two pipes, with the syncs a queue inserts), TBuf (a plain buffer), LocalMemAllocator.
//
// A queue orders its producer and consumer pipe as the chip's queues do (mpnpu/sync.h records each
// as a sync point at the kernel line of the queue call):
//
//   AllocTensor   producer waits consumer_producer for the buffer's last FreeTensor (a reused buffer)
//   EnQue         producer raises producer_consumer for this buffer
//   DeQue         consumer waits producer_consumer, gets the oldest enqueued tensor
//   FreeTensor    consumer raises consumer_producer: the buffer may be refilled
#ifndef MPNPU_TPIPE_H
#define MPNPU_TPIPE_H

#include <cstdint>
#include <memory>
#include <type_traits>

#include "native/rt.h"
#include "sync.h"
#include "tensor.h"
#include "types.h"

namespace mpnpu {

// The memory behind a position, and which core type has it (0: vector, 1: cube).
inline int position_memory(AscendC::TPosition pos) {
    using P = AscendC::TPosition;
    switch (pos) {
        case P::VECIN: case P::VECOUT: case P::VECCALC: case P::CO2: return MPNPU_MEM_UB;
        case P::A1: case P::B1: case P::C1: case P::TSCM: return MPNPU_MEM_L1;
        case P::A2: return MPNPU_MEM_L0A;
        case P::B2: return MPNPU_MEM_L0B;
        case P::CO1: return MPNPU_MEM_L0C;
        case P::C2: return MPNPU_MEM_BT;
        case P::C2PIPE2GM: return MPNPU_MEM_FB;
        default: return -1;
    }
}

inline const char* position_name(AscendC::TPosition pos) {
    static const char* names[] = {"GM", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2", "VECIN", "VECOUT",
                                  "VECCALC", "SPM", "TSCM", "C2PIPE2GM", "C2PIPE2LOCAL"};
    size_t i = size_t(pos);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

inline int memory_core_type(int mem) { return mem == MPNPU_MEM_UB ? 0 : 1; }

// (producer, consumer) pipes of a queue between two positions. A queue bound from VECIN to VECOUT
// (TQueBind<VECIN, VECOUT>) takes a buffer copied in straight out again, MTE2 -> MTE3; a trip
// through it named by positions (EnQue<GM, VECIN>, EnQue<VECOUT, GM>) takes that trip's pipes.
inline bool queue_pipes(AscendC::TPosition src, AscendC::TPosition dst, uint8_t& producer, uint8_t& consumer) {
    using P = AscendC::TPosition;
    if (src == P::VECIN && dst == P::VECOUT) {
        producer = P_MTE2;
        consumer = P_MTE3;
        return true;
    }
    P pos = src == dst ? src : (src == P::GM ? dst : src);
    switch (pos) {
        case P::VECIN: producer = P_MTE2; consumer = P_V; return true;
        case P::VECOUT: producer = P_V; consumer = P_MTE3; return true;
        case P::A1: case P::B1: producer = P_MTE2; consumer = P_MTE1; return true;
        case P::TSCM: producer = P_MTE2; consumer = P_MTE1; return true;  // (the matmul reads it on MTE1)
        case P::A2: case P::B2: producer = P_MTE1; consumer = P_M; return true;
        case P::CO1: producer = P_M; consumer = P_FIX; return true;
        default: return false;
    }
}

// HardEvent from its source and destination pipes (the queues pick their events this way).
inline AscendC::HardEvent event_of(uint8_t src, uint8_t dst) {
    for (int i = 0; i < int(AscendC::HardEvent::MAX); ++i) {
        const EventPipes& p = event_pipes(AscendC::HardEvent(i));
        if (p.src == src && p.dst == dst) return AscendC::HardEvent(i);
    }
    return AscendC::HardEvent::MAX;
}

// Reserves ``len`` bytes (rounded up to 32) of ``mem`` at ``used``; the capacity check of the chip.
inline uint64_t reserve(int mem, uint64_t& used, uint64_t len, const Site& site, const char* what) {
    uint64_t size = block_round_up(len);
    if (used + size > memory_size(mem))
        api_error(site, "%s: %s overflow: %llu bytes asked with %llu of %llu already in use", what, mem_name(mem),
                  (unsigned long long)size, (unsigned long long)used, (unsigned long long)memory_size(mem));
    uint64_t at = used;
    used += size;
    return at;
}

inline void check_local(int mem, AscendC::TPosition pos, const Site& site, const char* what) {
    if (mem < 0) api_error(site, "%s: position %s is not local memory", what, position_name(pos));
}

// The memory is on this kind of core. TPipe::InitBuffer / InitBufPool do not ask: on the device they
// only assign addresses (no memory is touched), so a kernel may set up its vector queues on the cube
// core too (mix kernels do, with one init for both kinds of core); the first real use of such a buffer
// there (AllocTensor, DeQue, Get) is the error.
inline void check_core_has(int mem, AscendC::TPosition pos, const Site& site, const char* what) {
    check_local(mem, pos, site, what);
    // TSCM on a vector core: the pages make it the vector core's window on its cube core's L1. As in the
    // vendor's CPU-debug library (a process per core), mpnpu gives the vector core an L1 of its own
    // there: what it writes stays in its process (a cube core's read of it is refused where mpnpu
    // would make one, the Matmul's TSCM inputs).
    if (pos == AscendC::TPosition::TSCM && mem == MPNPU_MEM_L1) return;
    int want = memory_core_type(mem);
    if (want != core().launch.core_type)
        api_error(site, "%s: %s (%s) is on %s cores, and this is a %s core", what, position_name(pos), mem_name(mem),
                  want ? "cube" : "vector", is_aic() ? "cube" : "vector");
}

}  // namespace mpnpu

namespace AscendC {

template <typename T>
LocalTensor<T>::LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize, mpnpu::Site site) {
    int mem = mpnpu::position_memory(pos);
    mpnpu::check_core_has(mem, pos, site, "LocalTensor(pos, addr, tileSize)");
    uint64_t bytes = mpnpu::elem_bytes<T>(tileSize);
    if (addr % mpnpu::BLOCK_BYTES)
        mpnpu::api_error(site, "LocalTensor(pos, addr, tileSize): addr %u is not 32-byte aligned", addr);
    if (uint64_t(addr) + bytes > mpnpu::memory_size(mem))
        mpnpu::api_error(site, "LocalTensor(pos, addr, tileSize): bytes [%u, %llu) are past the end of %s (%zu bytes)",
                         addr, (unsigned long long)(addr + bytes), mpnpu::mem_name(mem), mpnpu::memory_size(mem));
    // Nothing allocates a placed tensor: what bounds its accesses is its memory's end, not tileSize (an
    // instruction that runs past the tile into memory no other buffer holds does on the chip what it
    // says; the dev kit's cube samples rely on it). Only its memory's end is checked, as a device would.
    mpnpu_init(mem, pos, addr, tileSize, addr, mpnpu::memory_size(mem));
}

using TEventID = int8_t;
class TPipe;

namespace internal {
inline TPipe*& current_pipe() {
    static TPipe* pipe = nullptr;
    return pipe;
}
}  // namespace internal

}  // namespace AscendC

// The pipe the core's TPipe set when it was made (or the latest one made, of several). Declared
// outside AscendC, as its documented signature ``AscendC::TPipe* GetTPipePtr()`` says: kernels call it
// unqualified without ``using namespace AscendC`` (AscendC::GetTPipePtr names the same function).
inline AscendC::TPipe* GetTPipePtr() { return AscendC::internal::current_pipe(); }

namespace AscendC {

using ::GetTPipePtr;

// SetFlag / WaitFlag between two pipes named by the pipes themselves (the destination pipe waits for
// the source pipe's work before the SetFlag): the same event as HardEvent <src>_<dst>.
template <pipe_t src, pipe_t dst>
class TQueSync {
public:
    void SetFlag(TEventID id, MPNPU_SITE) { mpnpu::set_flag(event(site), id, site); }
    void WaitFlag(TEventID id, MPNPU_SITE) { mpnpu::wait_flag(event(site), id, site); }

private:
    static HardEvent event(const mpnpu::Site& site) {
        HardEvent e = mpnpu::event_of(uint8_t(src), uint8_t(dst));
        if (e == HardEvent::MAX)
            mpnpu::api_error(site, "TQueSync<%s, %s>: no event goes from that pipe to that one",
                             mpnpu::pipe_name(uint8_t(src)), mpnpu::pipe_name(uint8_t(dst)));
        return e;
    }
};

// A buffer of one queue or TBuf: where it is in its memory.
struct BufferSlot {
    int mem = MPNPU_MEM_UB;
    uint64_t offset = 0;
    uint64_t bytes = 0;
};

// A TBuf's position defaults to LCM (the same as VECCALC), so kernels may write TBuf<>.
template <TPosition pos = TPosition::LCM>
class TBuf;

class TQueBase {
public:
    virtual ~TQueBase() = default;
    // TPipe::InitBuffer(que, num, len): num buffers of len bytes each.
    virtual void mpnpu_init(TPipe& pipe, int mem, uint8_t num, uint64_t first, uint64_t len, const mpnpu::Site& site) = 0;
    virtual TPosition mpnpu_position() const = 0;
};

// TQue's third template argument in its second form: a pointer to one of these (a constexpr object).
// bufferLen / bufferNumber, when not 0, say in advance the len and num InitBuffer will be given (a
// different InitBuffer is an error); 0 leaves them to InitBuffer. nd2nz / nz2nd are format conversions
// of other chips (refused here); scmBlockGroup, consumerSize, consumer, enableStaticEvtId and
// enableLoopQueue are reserved and ignored.
struct TQueConfig {
    bool nd2nz = false;
    bool nz2nd = false;
    bool scmBlockGroup = false;
    uint32_t bufferLen = 0;
    uint32_t bufferNumber = 0;
    uint32_t consumerSize = 0;
    TPosition consumer[8] = {};
    bool enableStaticEvtId = false;
    bool enableLoopQueue = false;
};

// The pipe's accounting: bytes taken of each memory, event ids allocated. A TPipe assigned from
// another (``pipe = pipeIn;``, as kernels that keep a TPipe member do) shares the other's
// accounting from then on: both name the one pipe a core has, so buffers taken through either never
// overlap and the capacity check counts both.
struct PipeState {
    uint64_t used[MPNPU_MEM_COUNT] = {};
    uint8_t taken[size_t(HardEvent::MAX)] = {};

    // The lowest free id of ``evt``, reserved; -1 when all 8 are taken.
    int32_t take(HardEvent evt) {
        uint8_t& t = taken[size_t(evt)];
        for (int i = 0; i < 8; ++i) {
            if (!(t & (1u << i))) {
                t = uint8_t(t | (1u << i));
                return i;
            }
        }
        return -1;
    }
    void give_back(HardEvent evt, int32_t id) { taken[size_t(evt)] = uint8_t(taken[size_t(evt)] & ~(1u << id)); }
};

class TPipe {
public:
    TPipe() : state_(std::make_shared<PipeState>()) {
        prev_ = internal::current_pipe();
        internal::current_pipe() = this;
    }
    ~TPipe() {
        if (internal::current_pipe() == this) internal::current_pipe() = prev_;
    }
    TPipe(const TPipe&) = delete;
    // From here on this pipe and ``other`` are the same pipe (one accounting; see PipeState).
    TPipe& operator=(const TPipe& other) {
        if (this != &other) state_ = other.state_;
        return *this;
    }

    void Init() {}
    // Release every buffer and event id (the pipe can be used again from the start; the Reset page:
    // back to its initial state). A set no wait took (a queue's last FreeTensor before the kernel moves
    // on without FreeAllEvent) is forgotten here, ordering nothing, so that the next pipe's queues,
    // which get the same ids, do not pair their waits with it.
    void Reset(MPNPU_SITE) {
        mpnpu::forget_pending_flags(site);
        for (uint64_t& u : state_->used) u = 0;
        for (uint8_t& t : state_->taken) t = 0;
    }
    // Reset after a barrier of every pipe (what DestroyWithoutPipeAll leaves out): the documented way
    // to end one TPipe before the next (only one exists at a time).
    void Destroy(MPNPU_SITE) {
        mpnpu::pipe_barrier(uint8_t(PIPE_ALL), site);
        Reset(site);
    }
    void DestroyWithoutPipeAll(MPNPU_SITE) { Reset(site); }

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, MPNPU_SITE) {
        static_assert(std::is_base_of_v<TQueBase, Q>, "InitBuffer(que, num, len) takes a TQue or TQueBind");
        mpnpu::at(site);
        TPosition pos = que.mpnpu_position();
        int mem = mpnpu::position_memory(pos);
        mpnpu::check_local(mem, pos, site, "TPipe::InitBuffer");
        if (num == 0) mpnpu::api_error(site, "TPipe::InitBuffer: a queue needs at least one buffer");
        que.mpnpu_check_config(num, len, site);
        uint64_t size = mpnpu::block_round_up(len);
        uint64_t first = mpnpu::reserve(mem, state_->used[mem], size * num, site, "TPipe::InitBuffer");
        que.mpnpu_init(*this, mem, num, first, size, site);
        return true;
    }

    template <TPosition P>
    bool InitBuffer(TBuf<P>& buf, uint32_t len, MPNPU_SITE);

    // A sub-pool of ``len`` bytes of the pool's memory (TBufPool); with ``shareBuf``: the same bytes
    // as that pool (the two are used one after the other, each ended by its Reset).
    template <class T>
    bool InitBufPool(T& bufPool, uint32_t len, MPNPU_SITE);
    template <class T, class U>
    bool InitBufPool(T& bufPool, uint32_t len, U& shareBuf, MPNPU_SITE);

    template <HardEvent evt>
    TEventID AllocEventID(MPNPU_SITE) {
        int32_t id = state_->take(evt);
        if (id < 0)
            mpnpu::api_error(site, "AllocEventID<HardEvent::%s>: all 8 event ids are allocated (release one first; "
                                   "%s)", mpnpu::event_pipes(evt).name, kQueueIds);
        return TEventID(id);
    }
    // How a queue holds event ids (said in the errors of running out of them).
    static constexpr const char* kQueueIds =
        "a queue buffer holds one id per direction from its first AllocTensor until its queue's FreeAllEvent";

    template <HardEvent evt>
    void ReleaseEventID(TEventID id, MPNPU_SITE) {
        uint8_t& taken = state_->taken[size_t(evt)];
        if (id < 0 || id > 7 || !(taken & (1u << id)))
            mpnpu::api_error(site, "ReleaseEventID<HardEvent::%s>(%d): that id is not allocated",
                             mpnpu::event_pipes(evt).name, int(id));
        taken = uint8_t(taken & ~(1u << id));
    }

    // The lowest id not allocated, without reserving it (two uses of it at once are the kernel's bug).
    template <HardEvent evt>
    TEventID FetchEventID(MPNPU_SITE) {
        return FetchEventID(evt, site);
    }
    TEventID FetchEventID(HardEvent evt, MPNPU_SITE) {
        uint8_t taken = state_->taken[size_t(evt)];
        for (int i = 0; i < 8; ++i)
            if (!(taken & (1u << i))) return TEventID(i);
        mpnpu::api_error(site, "FetchEventID<HardEvent::%s>: all 8 event ids are allocated", mpnpu::event_pipes(evt).name);
    }

    template <TPosition P>
    uint64_t GetBaseAddr() {
        int mem = mpnpu::position_memory(P);
        return uint64_t(reinterpret_cast<uintptr_t>(mpnpu::memory_base(mem)));
    }

    // -- for mpnpu ---------------------------------------------------------------------------------------
    const std::shared_ptr<PipeState>& mpnpu_state() const { return state_; }
    uint64_t mpnpu_reserve(int mem, uint64_t len, const mpnpu::Site& site, const char* what) {
        return mpnpu::reserve(mem, state_->used[mem], len, site, what);
    }

private:
    TPipe* prev_ = nullptr;
    std::shared_ptr<PipeState> state_;
};

template <TPosition pos>
class TBuf {
public:
    template <typename T>
    LocalTensor<T> Get(MPNPU_SITE) const {
        return GetWithOffset<T>(uint32_t(mpnpu::bytes_elems<T>(slot_.bytes)), 0, site);
    }
    // The whole buffer as a tensor, as Get() gives it (TBuf has no queue: nothing is allocated or
    // handed on); FreeTensor gives nothing back.
    template <typename T>
    LocalTensor<T> AllocTensor(MPNPU_SITE) const {
        return Get<T>(site);
    }
    template <typename T>
    void FreeTensor(const LocalTensor<T>&) const {}
    template <typename T>
    LocalTensor<T> Get(uint32_t len, MPNPU_SITE) const {
        return GetWithOffset<T>(len, 0, site);
    }
    // ``size`` elements starting ``bufOffset`` bytes into the buffer. The documented limit (the view
    // within the buffer) is not checked by the device and changes nothing until an access: a view that
    // runs past the buffer is given as asked, and memcheck reports an access past the buffer's end.
    // Only a view past the end of the memory itself (which no access could use) stops the kernel.
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset, MPNPU_SITE) const {
        mpnpu::at(site);
        if (!ready_) mpnpu::api_error(site, "TBuf::Get: the buffer has no memory yet (TPipe::InitBuffer first)");
        mpnpu::check_core_has(slot_.mem, pos, site, "TBuf::Get");
        if (slot_.offset + uint64_t(bufOffset) + mpnpu::elem_bytes<T>(size) > mpnpu::memory_size(slot_.mem))
            mpnpu::api_error(site,
                             "TBuf::Get: %u elements of %zu bytes at byte %u of a buffer at byte %llu run past the "
                             "end of %s (%llu bytes)",
                             size, sizeof(T), bufOffset, (unsigned long long)slot_.offset,
                             mpnpu::mem_name(slot_.mem), (unsigned long long)mpnpu::memory_size(slot_.mem));
        LocalTensor<T> t;
        t.mpnpu_init(slot_.mem, pos, slot_.offset + bufOffset, size, slot_.offset, slot_.offset + slot_.bytes);
        return t;
    }
    void mpnpu_init(int mem, uint64_t offset, uint64_t bytes) {
        slot_ = BufferSlot{mem, offset, bytes};
        ready_ = true;
    }

private:
    BufferSlot slot_{};
    bool ready_ = false;
};

template <TPosition P>
bool TPipe::InitBuffer(TBuf<P>& buf, uint32_t len, mpnpu::Site site) {
    mpnpu::at(site);
    int mem = mpnpu::position_memory(P);
    mpnpu::check_local(mem, P, site, "TPipe::InitBuffer");
    uint64_t size = mpnpu::block_round_up(len);
    uint64_t at = mpnpu::reserve(mem, state_->used[mem], size, site, "TPipe::InitBuffer");
    buf.mpnpu_init(mem, at, size);  // (a len that is no multiple of 32 bytes is rounded up: Get() has it all)
    return true;
}

// A pool carved out of a TPipe's local memory (TPipe::InitBufPool) for memory reuse: queues and TBufs
// take their buffers from it (InitBuffer), it can be split further (InitBufPool), and a pool made
// with a ``shareBuf`` covers the same bytes as that pool. Reset() ends the pool's use before
// another pool over the same bytes starts: mpnpu waits there for every pipe of the core
// (PipeBarrier<PIPE_ALL>), so the next pool's first writes come after this one's last accesses;
// the buffers it gave out stay valid. ``bufIDSize``: how many buffers it may give out (at most 16).
template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool {
    static_assert(bufIDSize >= 1 && bufIDSize <= 16, "TBufPool: bufIDSize is 1..16");

public:
    static constexpr TPosition mpnpu_position = pos;

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, MPNPU_SITE) {
        static_assert(std::is_base_of_v<TQueBase, Q>, "InitBuffer(que, num, len) takes a TQue or TQueBind");
        mpnpu::at(site);
        if (num == 0) mpnpu::api_error(site, "TBufPool::InitBuffer: a queue needs at least one buffer");
        check_memory(que.mpnpu_position(), site);
        que.mpnpu_check_config(num, len, site);
        uint64_t size = round_up(len);
        uint64_t first = carve(size * num, num, site);
        TPipe* pipe = GetTPipePtr();
        if (pipe == nullptr) mpnpu::api_error(site, "TBufPool::InitBuffer: no TPipe exists");
        que.mpnpu_init(*pipe, mem_, num, first, size, site);
        return true;
    }
    template <TPosition P>
    bool InitBuffer(TBuf<P>& buf, uint32_t len, MPNPU_SITE) {
        mpnpu::at(site);
        check_memory(P, site);
        buf.mpnpu_init(mem_, carve(round_up(len), 1, site), round_up(len));
        return true;
    }
    template <class T>
    bool InitBufPool(T& bufPool, uint32_t len, MPNPU_SITE) {
        mpnpu::at(site);
        uint64_t size = round_up(len);
        bufPool.mpnpu_init(mem_, carve(size, 0, site), size);
        return true;
    }
    template <class T, class U>
    bool InitBufPool(T& bufPool, uint32_t len, U& shareBuf, MPNPU_SITE) {
        mpnpu::at(site);
        bufPool.mpnpu_share(shareBuf, round_up(len), site);
        return true;
    }
    void Reset(MPNPU_SITE) {
        mpnpu::at(site);
        if (!ready_) mpnpu::api_error(site, "TBufPool::Reset: the pool has no memory yet (InitBufPool first)");
        PipeBarrier<PIPE_ALL>(site);
    }

    // -- for mpnpu ---------------------------------------------------------------------------------------
    void mpnpu_init(int mem, uint64_t base, uint64_t bytes) {
        mem_ = mem;
        base_ = base;
        bytes_ = bytes;
        used_ = 0;
        ids_ = 0;
        ready_ = true;
    }
    template <class U>
    void mpnpu_share(const U& other, uint64_t bytes, const mpnpu::Site& site) {
        if (!other.mpnpu_ready())
            mpnpu::api_error(site, "InitBufPool: the pool to share has no memory yet (InitBufPool it first)");
        if (other.mpnpu_memory() != mpnpu::position_memory(pos))
            mpnpu::api_error(site, "InitBufPool: a pool at %s cannot share the memory of a pool in %s",
                             mpnpu::position_name(pos), mpnpu::mem_name(other.mpnpu_memory()));
        if (bytes > other.mpnpu_bytes())
            mpnpu::api_error(site, "InitBufPool: %llu bytes are more than the %llu of the pool it shares",
                             (unsigned long long)bytes, (unsigned long long)other.mpnpu_bytes());
        mpnpu_init(other.mpnpu_memory(), other.mpnpu_base(), bytes);
    }
    bool mpnpu_ready() const { return ready_; }
    int mpnpu_memory() const { return mem_; }
    uint64_t mpnpu_base() const { return base_; }
    uint64_t mpnpu_bytes() const { return bytes_; }

private:
    static uint64_t round_up(uint32_t len) {
        return mpnpu::block_round_up(len);
    }
    void check_memory(TPosition p, const mpnpu::Site& site) const {
        if (!ready_) mpnpu::api_error(site, "TBufPool::InitBuffer: the pool has no memory yet (InitBufPool first)");
        if (mpnpu::position_memory(p) != mem_)
            mpnpu::api_error(site, "TBufPool::InitBuffer: a buffer at %s does not fit a pool in %s",
                             mpnpu::position_name(p), mpnpu::mem_name(mem_));
    }
    // ``size`` bytes of the pool for ``n`` more buffers (0: a sub-pool).
    uint64_t carve(uint64_t size, uint32_t n, const mpnpu::Site& site) {
        if (!ready_) mpnpu::api_error(site, "TBufPool: the pool has no memory yet (InitBufPool first)");
        if (ids_ + n > bufIDSize)
            mpnpu::api_error(site, "TBufPool::InitBuffer: the pool gives out at most %u buffers (its bufIDSize)",
                             unsigned(bufIDSize));
        if (used_ + size > bytes_)
            mpnpu::api_error(site, "TBufPool: %llu bytes asked with %llu of the pool's %llu already given out",
                             (unsigned long long)size, (unsigned long long)used_, (unsigned long long)bytes_);
        uint64_t at = base_ + used_;
        used_ += size;
        ids_ += n;
        return at;
    }

    int mem_ = -1;
    uint64_t base_ = 0;
    uint64_t bytes_ = 0;
    uint64_t used_ = 0;
    uint32_t ids_ = 0;
    bool ready_ = false;
};

template <class T>
bool TPipe::InitBufPool(T& bufPool, uint32_t len, mpnpu::Site site) {
    mpnpu::at(site);
    int mem = mpnpu::position_memory(T::mpnpu_position);
    mpnpu::check_local(mem, T::mpnpu_position, site, "TPipe::InitBufPool");
    uint64_t size = mpnpu::block_round_up(len);
    bufPool.mpnpu_init(mem, mpnpu::reserve(mem, state_->used[mem], size, site, "TPipe::InitBufPool"), size);
    return true;
}

template <class T, class U>
bool TPipe::InitBufPool(T& bufPool, uint32_t len, U& shareBuf, mpnpu::Site site) {
    mpnpu::at(site);
    uint64_t size = mpnpu::block_round_up(len);
    bufPool.mpnpu_share(shareBuf, size, site);
    return true;
}

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind : public TQueBase {
public:
    static constexpr int kMaxBuffers = 8;

    void mpnpu_init(TPipe& pipe, int mem, uint8_t num, uint64_t first, uint64_t len, const mpnpu::Site& site) override {
        if (!mpnpu::queue_pipes(src, dst, producer_, consumer_))
            mpnpu::unsupported(site, "TQue at %s: mpnpu has queues at VECIN, VECOUT, A1, B1, A2, B2, TSCM, CO1 and CO2 "
                                     "(VECCALC is a TBuf)", mpnpu::position_name(src));
        if (num > kMaxBuffers) mpnpu::api_error(site, "TPipe::InitBuffer: at most %d buffers per queue", kMaxBuffers);
        fwd_ = mpnpu::event_of(producer_, consumer_);
        bwd_ = mpnpu::event_of(consumer_, producer_);
        if (fwd_ == HardEvent::MAX || bwd_ == HardEvent::MAX)
            mpnpu::api_error(site, "a queue between these positions has no event");
        // A buffer takes its event ids from the pipe when it is first allocated and keeps them until
        // the queue's FreeAllEvent gives them back (the TQue and FreeAllEvent pages).
        pipe_ = pipe.mpnpu_state();
        num_ = num;
        buf_ids_ = std::make_shared<BufferIds>();
        for (int i = 0; i < num; ++i) {
            slots_[i] = BufferSlot{mem, first + uint64_t(i) * len, len};
            buf_ids_->fwd[i] = -1;
            buf_ids_->bwd[i] = -1;
            reused_[i] = false;
            held_[i] = false;
            free_[i] = int8_t(i);
        }
        n_free_ = num;
        n_queued_ = 0;
        head_ = 0;
        ready_ = true;
    }
    TPosition mpnpu_position() const override { return src == TPosition::GM ? dst : src; }
    // A queue declared with a TQueConfig: what InitBuffer is given must agree with it.
    void mpnpu_check_config(uint8_t num, uint32_t len, const mpnpu::Site& site) const {
        if constexpr (std::is_pointer_v<decltype(mask)>) {
            static_assert(std::is_same_v<decltype(mask), const TQueConfig*>,
                          "TQue's third template argument is an int mask or a const TQueConfig*");
            static_assert(mask != nullptr, "TQue<pos, depth, conf>: conf must point to a TQueConfig");
            if (mask->nd2nz || mask->nz2nd)
                mpnpu::unsupported(site, "TQueConfig: nd2nz / nz2nd (format conversion in the queue) are not on "
                                         "this chip class");
            if (mask->bufferNumber != 0 && mask->bufferNumber != num)
                mpnpu::api_error(site, "TPipe::InitBuffer: the queue's TQueConfig says bufferNumber %u, and "
                                       "InitBuffer asks for %u buffers", unsigned(mask->bufferNumber), unsigned(num));
            if (mask->bufferLen != 0 && mask->bufferLen != len)
                mpnpu::api_error(site, "TPipe::InitBuffer: the queue's TQueConfig says bufferLen %u, and InitBuffer "
                                       "asks for %u bytes", unsigned(mask->bufferLen), unsigned(len));
        } else {
            (void)num, (void)len, (void)site;
        }
    }

    template <typename T>
    LocalTensor<T> AllocTensor(MPNPU_SITE) {
        mpnpu::at(site);
        check_ready(site, "AllocTensor");
        mpnpu::check_core_has(slots_[0].mem, mpnpu_position(), site, "TQue::AllocTensor");
        if (n_free_ == 0)
            mpnpu::api_error(site, "TQue::AllocTensor: all %d buffers are in use (FreeTensor one first; the device "
                                   "would hang)", int(num_));
        int s = free_[0];
        if (buf_ids_->fwd[s] < 0) {
            buf_ids_->fwd[s] = take(fwd_, site);
            buf_ids_->bwd[s] = take(bwd_, site);
        }
        for (int i = 1; i < n_free_; ++i) free_[i - 1] = free_[i];
        --n_free_;
        if (reused_[s]) mpnpu::wait_flag(bwd_, buf_ids_->bwd[s], site);
        held_[s] = true;
        const BufferSlot& b = slots_[s];
        LocalTensor<T> t;
        t.mpnpu_init(b.mem, mpnpu_position(), b.offset, uint32_t(mpnpu::bytes_elems<T>(b.bytes)), b.offset, b.offset + b.bytes);
        return t;
    }
    template <typename T>
    void AllocTensor(LocalTensor<T>& tensor, MPNPU_SITE) {
        tensor = AllocTensor<T>(site);
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor, MPNPU_SITE) {
        mpnpu::at(site);
        check_ready(site, "EnQue");
        int s = slot_of(tensor.mpnpu_buf_lo(), site, "EnQue");
        return enqueue(tensor, s, fwd_, buf_ids_->fwd[s], site);
    }
    // A trip named by positions (EnQue<VECOUT, GM>: the vector core's result to the copy out) sets
    // the event of that trip's pipes, with an id the buffer takes for it on first use.
    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    bool EnQue(const LocalTensor<T>& tensor, MPNPU_SITE) {
        mpnpu::at(site);
        check_ready(site, "EnQue");
        int s = slot_of(tensor.mpnpu_buf_lo(), site, "EnQue");
        HardEvent evt = trip_event(srcUserPos, dstUserPos, site);
        return enqueue(tensor, s, evt, evt == fwd_ ? buf_ids_->fwd[s] : trip_id(s, evt, site), site);
    }

private:
    template <typename T>
    bool enqueue(const LocalTensor<T>& tensor, int s, HardEvent evt, TEventID id, const mpnpu::Site& site) {
        if (n_queued_ >= depth_limit())
            mpnpu::api_error(site, "TQue::EnQue: the queue's depth is %d and %d tensors are already enqueued",
                             int(depth_limit()), int(n_queued_));
        mpnpu::set_flag(evt, id, site);
        queued_evt_[(head_ + n_queued_) % kMaxBuffers] = evt;
        queued_id_[(head_ + n_queued_) % kMaxBuffers] = id;
        queued_[(head_ + n_queued_) % kMaxBuffers] = int8_t(s);
        queued_off_[(head_ + n_queued_) % kMaxBuffers] = tensor.mpnpu_offset();
        queued_size_[(head_ + n_queued_) % kMaxBuffers] = mpnpu::elem_bytes<T>(tensor.GetSize());
        ++n_queued_;
        return true;
    }

public:

    // With no type (``que.DeQue();``, as kernels write it to only wait for the enqueued copy): the
    // tensor as bytes.
    template <typename T = uint8_t>
    LocalTensor<T> DeQue(MPNPU_SITE) {
        mpnpu::at(site);
        check_ready(site, "DeQue");
        mpnpu::check_core_has(slots_[0].mem, mpnpu_position(), site, "TQue::DeQue");
        if (n_queued_ == 0) mpnpu::api_error(site, "TQue::DeQue: nothing is enqueued (the device would hang)");
        int s = queued_[head_];
        uint64_t off = queued_off_[head_], bytes = queued_size_[head_];
        HardEvent evt = queued_evt_[head_];
        TEventID id = queued_id_[head_];
        head_ = (head_ + 1) % kMaxBuffers;
        --n_queued_;
        mpnpu::wait_flag(evt, id, site);  // the event its EnQue set (a trip named by positions: that trip's)
        const BufferSlot& b = slots_[s];
        LocalTensor<T> t;
        t.mpnpu_init(b.mem, mpnpu_position(), off, uint32_t(mpnpu::bytes_elems<T>(bytes)), b.offset, b.offset + b.bytes);
        return t;
    }
    template <typename T>
    void DeQue(LocalTensor<T>& tensor, MPNPU_SITE) {
        tensor = DeQue<T>(site);
    }
    template <TPosition srcUserPos, TPosition dstUserPos, typename T>
    LocalTensor<T> DeQue(MPNPU_SITE) {
        return DeQue<T>(site);
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor, MPNPU_SITE) {
        mpnpu::at(site);
        check_ready(site, "FreeTensor");
        int s = slot_of(tensor.mpnpu_buf_lo(), site, "FreeTensor");
        if (!held_[s]) mpnpu::api_error(site, "TQue::FreeTensor: the tensor's buffer is not allocated (freed twice?)");
        mpnpu::set_flag(bwd_, buf_ids_->bwd[s], site);
        held_[s] = false;
        reused_[s] = true;
        free_[n_free_++] = int8_t(s);
    }

    bool VacantInQue() const { return n_queued_ < depth_limit(); }
    bool HasTensorInQue() const { return n_queued_ > 0; }
    int32_t GetTensorCountInQue() const { return n_queued_; }
    bool HasIdleBuffer() const { return n_free_ > 0; }
    // Consume the events the queue's last FreeTensors raised (so none is left set at the end), and
    // give the event ids of the buffers not in use back to the pipe (another queue may take them).
    void FreeAllEvent(MPNPU_SITE) {
        for (int i = 0; i < num_; ++i) {
            if (held_[i]) continue;
            if (reused_[i]) {
                mpnpu::wait_flag(bwd_, buf_ids_->bwd[i], site);
                reused_[i] = false;
            }
            if (buf_ids_->fwd[i] >= 0) {
                pipe_->give_back(fwd_, buf_ids_->fwd[i]);
                pipe_->give_back(bwd_, buf_ids_->bwd[i]);
                buf_ids_->fwd[i] = buf_ids_->bwd[i] = -1;
            }
            for (int k = 0; k < kTrips; ++k) {
                if (buf_ids_->trip_id[i][k] >= 0) pipe_->give_back(buf_ids_->trip_evt[i][k], buf_ids_->trip_id[i][k]);
                buf_ids_->trip_id[i][k] = -1;
            }
        }
    }

private:
    // The event of a trip named by positions (EnQue<src, dst> / DeQue<src, dst>).
    static HardEvent trip_event(TPosition from, TPosition to, const mpnpu::Site& site) {
        uint8_t p = 0, c = 0;
        const HardEvent evt = mpnpu::queue_pipes(from, to, p, c) ? mpnpu::event_of(p, c) : HardEvent::MAX;
        if (evt == HardEvent::MAX)
            mpnpu::api_error(site, "TQue::EnQue<%s, %s>: no queue trip between these positions",
                             mpnpu::position_name(from), mpnpu::position_name(to));
        return evt;
    }
    // The buffer's id for a trip's event other than the queue's own (taken on first use, kept until
    // FreeAllEvent, as the buffer's own ids are).
    TEventID trip_id(int s, HardEvent evt, const mpnpu::Site& site) {
        for (int k = 0; k < kTrips; ++k)
            if (buf_ids_->trip_id[s][k] >= 0 && buf_ids_->trip_evt[s][k] == evt) return buf_ids_->trip_id[s][k];
        for (int k = 0; k < kTrips; ++k) {
            if (buf_ids_->trip_id[s][k] < 0) {
                buf_ids_->trip_evt[s][k] = evt;
                buf_ids_->trip_id[s][k] = take(evt, site);
                return buf_ids_->trip_id[s][k];
            }
        }
        mpnpu::unsupported(site, "TQue::EnQue: more than %d kinds of trip through one queue buffer", kTrips);
    }
    // An event id of the pipe for a buffer (the kernel's AllocEventID ids are the same 8).
    TEventID take(HardEvent evt, const mpnpu::Site& site) {
        int32_t id = pipe_->take(evt);
        if (id < 0)
            mpnpu::api_error(site, "TQue::AllocTensor: all 8 event ids of HardEvent::%s are taken (%s; on this "
                                   "chip class a position has at most 8 queue buffers in use, 4 queues when "
                                   "double-buffered)", mpnpu::event_pipes(evt).name, TPipe::kQueueIds);
        return TEventID(id);
    }
    int32_t depth_limit() const { return depth > 0 ? depth : num_; }
    void check_ready(const mpnpu::Site& site, const char* what) const {
        if (!ready_) mpnpu::api_error(site, "TQue::%s: the queue has no buffers yet (TPipe::InitBuffer first)", what);
    }
    int slot_of(uint64_t buf_lo, const mpnpu::Site& site, const char* what) const {
        for (int i = 0; i < num_; ++i)
            if (slots_[i].offset == buf_lo) return i;
        mpnpu::api_error(site, "TQue::%s: the tensor was not allocated from this queue", what);
    }

    uint8_t producer_ = mpnpu::P_MTE2, consumer_ = mpnpu::P_V;
    HardEvent fwd_ = HardEvent::MTE2_V, bwd_ = HardEvent::V_MTE2;
    std::shared_ptr<PipeState> pipe_;  // whose event ids the buffers' trips take
    int num_ = 0;
    BufferSlot slots_[kMaxBuffers];
    // The event ids of each buffer (-1: not taken yet), shared by copies of the queue: they belong to
    // the buffers (the TQue page), which a copy of the queue object still names.
    static constexpr int kTrips = 3;  // trips named by positions a buffer may take besides its own
    struct BufferIds {
        TEventID fwd[kMaxBuffers];
        TEventID bwd[kMaxBuffers];
        HardEvent trip_evt[kMaxBuffers][kTrips] = {};
        TEventID trip_id[kMaxBuffers][kTrips];
        BufferIds() {
            for (auto& row : trip_id)
                for (TEventID& id : row) id = -1;
        }
    };
    std::shared_ptr<BufferIds> buf_ids_;
    bool reused_[kMaxBuffers] = {};
    bool held_[kMaxBuffers] = {};
    int8_t free_[kMaxBuffers] = {};
    int n_free_ = 0;
    int8_t queued_[kMaxBuffers] = {};
    HardEvent queued_evt_[kMaxBuffers] = {};  // the event each enqueued tensor's EnQue set, and its id
    TEventID queued_id_[kMaxBuffers] = {};
    uint64_t queued_off_[kMaxBuffers] = {};
    uint64_t queued_size_[kMaxBuffers] = {};
    int n_queued_ = 0;
    int head_ = 0;
    bool ready_ = false;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

// A queue whose buffers are in L1 at the TSCM position (a Matmul's TSCM input), filled from pos (GM:
// a copy on MTE2), as its page defines it.
template <TPosition pos, int32_t depth, auto mask = 0>
using TSCM = TQueBind<pos, TPosition::TSCM, depth, mask>;

// Allocates local memory from the start of one memory, in order (as TPipe does, but without
// queues or event ids).
template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
public:
    template <class T, uint32_t tileSize>
    LocalTensor<T> Alloc(MPNPU_SITE) {
        return Alloc<default_position(), T>(tileSize, site);
    }
    template <TPosition pos, class T, uint32_t tileSize>
    LocalTensor<T> Alloc(MPNPU_SITE) {
        return Alloc<pos, T>(tileSize, site);
    }
    template <class T>
    LocalTensor<T> Alloc(uint32_t tileSize, MPNPU_SITE) {
        return Alloc<default_position(), T>(tileSize, site);
    }
    template <TPosition pos, class T>
    LocalTensor<T> Alloc(uint32_t tileSize, MPNPU_SITE) {
        int mem = memory();
        mpnpu::check_core_has(mem, pos, site, "LocalMemAllocator::Alloc");
        uint64_t bytes = mpnpu::elem_bytes<T>(tileSize);
        uint64_t at = mpnpu::reserve(mem, used_, bytes, site, "LocalMemAllocator::Alloc");
        LocalTensor<T> t;
        t.mpnpu_init(mem, pos, at, tileSize, at, at + bytes);
        return t;
    }
    uint32_t GetCurAddr() const { return uint32_t(used_); }

private:
    static constexpr TPosition default_position() {
        switch (hard) {
            case Hardware::L1: return TPosition::A1;
            case Hardware::L0A: return TPosition::A2;
            case Hardware::L0B: return TPosition::B2;
            case Hardware::L0C: return TPosition::CO1;
            default: return TPosition::VECCALC;
        }
    }
    static int memory() {
        switch (hard) {
            case Hardware::UB: return MPNPU_MEM_UB;
            case Hardware::L1: return MPNPU_MEM_L1;
            case Hardware::L0A: return MPNPU_MEM_L0A;
            case Hardware::L0B: return MPNPU_MEM_L0B;
            case Hardware::L0C: return MPNPU_MEM_L0C;
            case Hardware::BIAS: return MPNPU_MEM_BT;
            case Hardware::FIXBUF: return MPNPU_MEM_FB;
            default: return -1;
        }
    }
    uint64_t used_ = 0;
};

// PopStackBuffer<T, pos>(popLocal): popLocal becomes the rest of pos's memory, from the end of what the
// core's TPipe has given out to the end of the memory (documented: all the space left there). The
// space is not reserved: it is the pipe's free space, so a buffer the pipe gives out later shares
// it (the pages forbid nesting and mixing with the high-level calls that pop the same stack; mpnpu's
// high-level calls do not pop it). False, with popLocal unchanged, when no TPipe exists or nothing
// is left.
template <typename T, TPosition pos>
inline bool PopStackBuffer(LocalTensor<T>& popLocal, MPNPU_SITE) {
    static_assert(std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> ||
                      std::is_same_v<T, uint16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t> ||
                      std::is_same_v<T, int64_t> || std::is_same_v<T, uint64_t> || std::is_same_v<T, float> ||
                      std::is_same_v<T, half>,
                  "PopStackBuffer: T is one of uint8_t, int8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, "
                  "uint64_t, float, half");
    mpnpu::at(site);
    TPipe* pipe = GetTPipePtr();
    if (pipe == nullptr) return false;
    const int mem = mpnpu::position_memory(pos);
    mpnpu::check_core_has(mem, pos, site, "PopStackBuffer");
    const uint64_t used = pipe->mpnpu_state()->used[mem], end = mpnpu::memory_size(mem);
    if (used + sizeof(T) > end) return false;
    popLocal.mpnpu_init(mem, pos, used, uint32_t(mpnpu::bytes_elems<T>(end - used)), used, end);
    return true;
}

}  // namespace AscendC

#endif  // MPNPU_TPIPE_H
