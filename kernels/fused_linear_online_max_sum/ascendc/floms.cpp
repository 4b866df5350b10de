// fused_linear_online_max_sum (FLOMS) as an Ascend C mix kernel: 1 cube core and 2 vector cores
// per AI core. Written for mpnpu from docs/operator-floms.md and the Python kernel (kernel.py),
// with the same stages, tiling, workspace and sync points:
//
//   InitOutputAndWorkspace  (vector)  online max := lowest, online sum := 0, predicted_logits := 0;
//                                     masked_target and target_mask zeroed in 32-byte blocks dealt
//                                     round-robin to the vector cores
//   SyncAll<false>()                  S0
//   TargetProcess           (vector)  masked targets -> workspace (for CVProcess) and the
//                                     masked_target output; target_mask bits
//   SyncAll<false>()                  S1: missing in the incident (operator_cxx.py drops it by line)
//   CVProcess               cube:     tile = input x weight^T (MatmulImpl, IterateAll) into a
//                                     ping-pong GM tile buffer, tile-ready flag 5 on PIPE_FIX
//                           vector:   wait flag 5; online max / sum of half the tile's rows; the
//                                     logit at masked_target gathered and atomically added into
//                                     predicted_logits; the buffer released with flag 6 / 7
//   SyncAll<false>()                  S2
//   AllReduceProcess        (vector)  merge the per-cube-core partials; predicted -= max; mask
//
// -D switches: DTYPE_INPUT (half, bfloat16_t), DTYPE_TARGET (int32_t, int64_t), and one diagnosis
// probe at a time (FLOMS_PROBE_*; see probes.py): the instrumentation the write-up's engineer
// added for each step of the diagnosis. Nothing here waits, sleeps or changes data to make the race
// show: whether CVProcess reads masked targets before TargetProcess wrote them is up to the OS.
// Target ids are compared in float32, exactly for ids below 2^24.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "floms_tiling.h"

using namespace AscendC;

#ifndef DTYPE_INPUT
#define DTYPE_INPUT half
#endif
#ifndef DTYPE_TARGET
#define DTYPE_TARGET int32_t
#endif

namespace floms {

// -- diagnosis probes (one -D at a time) ----------------------------------------------------------------

#if defined(FLOMS_PROBE_ONLY_PREDICTED)
constexpr bool WRITE_OTHER_OUTPUTS = false;  // O4: every copy-out except predicted_logits disabled
#else
constexpr bool WRITE_OTHER_OUTPUTS = true;
#endif
#if defined(FLOMS_PROBE_INIT_SENTINEL)
constexpr bool INIT_SENTINEL = true;  // O5b: predicted_logits initialised to the case's constant
#else
constexpr bool INIT_SENTINEL = false;
#endif
#if defined(FLOMS_PROBE_INIT_ZERO_ONLY) || defined(FLOMS_PROBE_INIT_SENTINEL)
constexpr bool CV_WRITES_PREDICTED = false;  // O5: every write after the initialisation disabled
#else
constexpr bool CV_WRITES_PREDICTED = true;
#endif
#if defined(FLOMS_PROBE_INIT_ZERO_ONLY) || defined(FLOMS_PROBE_INIT_SENTINEL) || \
    defined(FLOMS_PROBE_NO_ALLREDUCE_COPYOUT) || defined(FLOMS_PROBE_COPY_VOCAB_LOGITS) ||  \
    defined(FLOMS_PROBE_COPY_MASKED_TARGET)
constexpr bool ALLREDUCE_WRITES_PREDICTED = false;  // O6, O8: predicted_logits keeps CVProcess's result
#else
constexpr bool ALLREDUCE_WRITES_PREDICTED = true;
#endif
#if defined(FLOMS_PROBE_PIPE_BARRIER_ALL)
constexpr bool PIPE_BARRIERS = true;  // O7: PipeBarrier<PIPE_ALL> between the gather's instructions
#else
constexpr bool PIPE_BARRIERS = false;
#endif
#if defined(FLOMS_PROBE_COPY_VOCAB_LOGITS)
constexpr int COPIED_DEPENDENCY = 1;  // O8: the cube result (the row's first logit) instead of the gather
#elif defined(FLOMS_PROBE_COPY_MASKED_TARGET)
constexpr int COPIED_DEPENDENCY = 2;  // O8: masked_target as CVProcess read it instead of the gather
#else
constexpr int COPIED_DEPENDENCY = 0;
#endif

// -- constants ------------------------------------------------------------------------------------------

constexpr uint16_t FLAG_TILE_READY = 5;     // cube -> vector (mode 2): a tile is in its ping-pong buffer
constexpr uint16_t FLAG_BUFFER_FREE0 = 6;   // vector -> cube (mode 2): buffer 0 may be overwritten
constexpr uint16_t FLAG_BUFFER_FREE1 = 7;   // ... buffer 1
constexpr uint32_t BLOCK = 32;              // bytes of a data block
constexpr uint32_t REPEAT_FLOATS = 64;      // float lanes of one repeat
constexpr uint32_t ROWS_CHUNK = 256;        // rows per pass in Init / TargetProcess / AllReduce
constexpr uint32_t ZERO_BLOCKS = 64;        // 32-byte zero blocks copied per DataCopy in Init
constexpr float LOWEST = -3.40282347e+38f;  // the online max's start and the padding of partial tiles

__aicore__ inline uint32_t Align(uint32_t n, uint32_t a) { return (n + a - 1) / a * a; }
__aicore__ inline uint32_t CeilDiv(uint32_t n, uint32_t a) { return (n + a - 1) / a; }

// The vector cores' UB, carved per stage. Each stage has a region of its own, so that a missing
// SyncAll between two stages leaves only the cross-core hazards it really opens; AllReduceProcess
// (after S2) reuses CVProcess's region.
struct UbLayout {
    uint32_t init, target, cv, total;
};

template <typename inT, typename tgtT>
class FusedLinearOnlineMaxSum {
public:
    __aicore__ inline FusedLinearOnlineMaxSum() {}

    __aicore__ inline void Init(GM_ADDR input, GM_ADDR weight, GM_ADDR target, GM_ADDR logitsMax,
                                GM_ADDR sumExpLogits, GM_ADDR predictedLogits, GM_ADDR targetMask,
                                GM_ADDR maskedTarget, GM_ADDR vocabParallelLogits, GM_ADDR workspace,
                                const FlomsTilingData* tiling) {
        t_ = tiling;
        bt_ = uint32_t(t_->bt);
        h_ = uint32_t(t_->h);
        v_ = uint32_t(t_->v);
        blockDim_ = uint32_t(t_->blockDim);
        nVector_ = 2 * blockDim_;
        inputGm_.SetGlobalBuffer((__gm__ inT*)input, uint64_t(bt_) * h_);
        weightGm_.SetGlobalBuffer((__gm__ inT*)weight, uint64_t(v_) * h_);
        targetGm_.SetGlobalBuffer((__gm__ tgtT*)target, bt_);
        logitsMaxGm_.SetGlobalBuffer((__gm__ float*)logitsMax, bt_);
        sumExpGm_.SetGlobalBuffer((__gm__ float*)sumExpLogits, bt_);
        predictedGm_.SetGlobalBuffer((__gm__ float*)predictedLogits, bt_);
        targetMaskGm_.SetGlobalBuffer((__gm__ uint8_t*)targetMask, CeilDiv(bt_, 8));
        maskedTargetGm_.SetGlobalBuffer((__gm__ tgtT*)maskedTarget, bt_);
        vocabLogitsGm_.SetGlobalBuffer((__gm__ inT*)vocabParallelLogits, t_->returnLogits ? uint64_t(bt_) * v_ : 0);
        __gm__ uint8_t* ws = (__gm__ uint8_t*)GetUserWorkspace(workspace);
        onlineMaxGm_.SetGlobalBuffer((__gm__ float*)(ws + t_->onlineMaxOffset), uint64_t(blockDim_) * bt_);
        onlineSumGm_.SetGlobalBuffer((__gm__ float*)(ws + t_->onlineSumOffset), uint64_t(blockDim_) * bt_);
        const uint64_t tileElems = uint64_t(t_->baseM) * uint64_t(t_->baseN);
        tileGm_.SetGlobalBuffer((__gm__ inT*)(ws + t_->tileBufferOffset), uint64_t(blockDim_) * 2 * tileElems);
        tileGmF_.SetGlobalBuffer((__gm__ float*)(ws + t_->tileBufferOffset), uint64_t(blockDim_) * 2 * tileElems);
        maskedWsGm_.SetGlobalBuffer((__gm__ tgtT*)(ws + t_->maskedTargetOffset), bt_);
        if ASCEND_IS_AIV {
            ub_ = Layout();
            pipe_.InitBuffer(ubBuf_, ub_.total);
        }
    }

    __aicore__ inline void Process() {
        if ASCEND_IS_AIV {
            InitOutputAndWorkspace();
        }
        SyncAll<false>();
        if ASCEND_IS_AIV {
            TargetProcess();
        }
        SyncAll<false>();
        if ASCEND_IS_AIC {
            if (t_->returnLogits) {
                CVProcess(mmFloat_, tileGmF_);
            } else {
                CVProcess(mm_, tileGm_);
            }
        } else {
            CVProcess();
        }
        SyncAll<false>();
        if ASCEND_IS_AIV {
            AllReduceProcess();
        }
    }

private:
    // -- UB ---------------------------------------------------------------------------------------------

    __aicore__ inline UbLayout Layout() const {
        const uint32_t hmA = Align(uint32_t(t_->halfM), REPEAT_FLOATS);
        const uint32_t w = Align(uint32_t(t_->baseN), REPEAT_FLOATS);
        UbLayout l;
        l.init = 0;
        l.target = 3 * ROWS_CHUNK * 4 + ZERO_BLOCKS * BLOCK;
        l.cv = l.target + ROWS_CHUNK * (2 * uint32_t(sizeof(tgtT)) + 2 * 4) + 3 * Align(ROWS_CHUNK / 8, BLOCK);
        const uint32_t halfM = uint32_t(t_->halfM);
        const uint32_t cvBytes = halfM * w * uint32_t(sizeof(inT)) + 2 * halfM * w * 4 + halfM * w / 2  // tile, x, e, blocks
                                 + hmA * (11 * 4 + uint32_t(sizeof(tgtT))) + Align(halfM, 8) * BLOCK +
                                 2 * Align(hmA / 8, BLOCK) + 20 * BLOCK;  // (the carves' alignment)
        const uint32_t allReduceBytes = 2 * blockDim_ * ROWS_CHUNK * 4 + ROWS_CHUNK * (uint32_t(sizeof(tgtT)) + 5 * 4) +
                                        2 * Align(ROWS_CHUNK / 8, BLOCK) + 12 * BLOCK;
        l.total = l.cv + (cvBytes > allReduceBytes ? cvBytes : allReduceBytes);
        return l;
    }

    // ``count`` elements of T at ``*at`` bytes into UB, the cursor moved on to the next 32-byte boundary.
    template <typename T>
    __aicore__ inline LocalTensor<T> Carve(uint32_t& at, uint32_t count) const {
        LocalTensor<T> t = ubBuf_.GetWithOffset<T>(count, at);
        at = Align(at + count * uint32_t(sizeof(T)), BLOCK);
        return t;
    }

    // Rows [r0, r1) of vector core ``vec`` in Init, TargetProcess and AllReduce.
    __aicore__ inline void VectorRows(uint32_t vec, uint32_t& r0, uint32_t& r1) const {
        const uint32_t per = uint32_t(t_->rowsPerVector);
        r0 = vec * per < bt_ ? vec * per : bt_;
        r1 = r0 + per < bt_ ? r0 + per : bt_;
    }

    // In-shard bits of ``count`` (a multiple of 64) targets given as float: start <= t < end.
    __aicore__ inline void ShardBits(const LocalTensor<float>& tf, const LocalTensor<uint8_t>& inBits,
                                     const LocalTensor<uint8_t>& tmpBits, uint32_t count) {
        Compares(inBits, tf, float(t_->vocabStartIndex), CMPMODE::GE, count);
        Compares(tmpBits, tf, float(t_->vocabEndIndex), CMPMODE::LT, count);
        And(inBits.template ReinterpretCast<uint16_t>(), inBits.template ReinterpretCast<uint16_t>(),
            tmpBits.template ReinterpretCast<uint16_t>(), int32_t(count / 16));
    }

    __aicore__ inline void TargetToFloat(const LocalTensor<float>& tf, const LocalTensor<tgtT>& tgt, uint32_t count) {
        if constexpr (std::is_same_v<tgtT, int64_t>) {
            Cast(tf, tgt, RoundMode::CAST_RINT, count);
        } else {
            Cast(tf, tgt, RoundMode::CAST_NONE, count);
        }
    }

    // -- stage 1: InitOutputAndWorkspace (vector) --------------------------------------------------------

    __aicore__ inline void InitOutputAndWorkspace() {
        const uint32_t vec = GetBlockIdx();
        uint32_t at = ub_.init;
        LocalTensor<float> lowest = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<float> zeros = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<float> predictedInit = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<uint8_t> zeroBlocks = Carve<uint8_t>(at, ZERO_BLOCKS * BLOCK);
        Duplicate(lowest, LOWEST, int32_t(ROWS_CHUNK));
        Duplicate(zeros, 0.0f, int32_t(ROWS_CHUNK));
        Duplicate(predictedInit, INIT_SENTINEL ? t_->probeValue : 0.0f, int32_t(ROWS_CHUNK));
        Duplicate(zeroBlocks.template ReinterpretCast<int32_t>(), int32_t(0), int32_t(ZERO_BLOCKS * BLOCK / 4));
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        // masked_target and target_mask := 0 in 32-byte blocks dealt round-robin to the vector cores
        // (this one takes blocks vec, vec + nVector, ...; the partial last block goes to the core
        // whose turn it is). TargetProcess writes the same bytes split by rows, so most blocks
        // cleared here are written there by another core: S0 orders the two.
        if constexpr (WRITE_OTHER_OUTPUTS) {
            const GlobalTensor<uint8_t> cleared[2] = {maskedTargetGm_.template ReinterpretCast<uint8_t>(),
                                                      targetMaskGm_};
            const uint32_t bytes[2] = {bt_ * uint32_t(sizeof(tgtT)), CeilDiv(bt_, 8)};
            for (uint32_t i = 0; i < 2; ++i) {
                const uint32_t full = bytes[i] / BLOCK, tail = bytes[i] % BLOCK;
                const uint32_t mine = full > vec ? CeilDiv(full - vec, nVector_) : 0;
                for (uint32_t done = 0; done < mine; done += ZERO_BLOCKS) {
                    const uint32_t n = mine - done < ZERO_BLOCKS ? mine - done : ZERO_BLOCKS;
                    DataCopy(cleared[i][uint64_t(vec + done * nVector_) * BLOCK], zeroBlocks,
                             DataCopyParams(uint16_t(n), 1, 0, uint16_t(nVector_ - 1)));
                }
                if (tail && full % nVector_ == vec) {
                    DataCopyPad(cleared[i][uint64_t(full) * BLOCK], zeroBlocks, DataCopyExtParams(1, tail, 0, 0));
                }
            }
        }
        // online max := lowest, online sum := 0 (one row of partials per cube core), predicted := 0
        uint32_t r0, r1;
        VectorRows(vec, r0, r1);
        for (uint32_t c0 = r0; c0 < r1; c0 += ROWS_CHUNK) {
            const uint32_t m = r1 - c0 < ROWS_CHUNK ? r1 - c0 : ROWS_CHUNK;
            const DataCopyExtParams rows(1, m * 4, 0, 0);
            for (uint32_t cube = 0; cube < blockDim_; ++cube) {
                DataCopyPad(onlineMaxGm_[uint64_t(cube) * bt_ + c0], lowest, rows);
                DataCopyPad(onlineSumGm_[uint64_t(cube) * bt_ + c0], zeros, rows);
            }
            DataCopyPad(predictedGm_[c0], predictedInit, rows);
        }
    }

    // -- stage 2: TargetProcess (vector) ------------------------------------------------------------------

    __aicore__ inline void TargetProcess() {
        uint32_t r0, r1;
        VectorRows(GetBlockIdx(), r0, r1);
        uint32_t at = ub_.target;
        LocalTensor<tgtT> tgt = Carve<tgtT>(at, ROWS_CHUNK);
        LocalTensor<float> tf = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<float> maskedF = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<tgtT> masked = Carve<tgtT>(at, ROWS_CHUNK);
        LocalTensor<uint8_t> inBits = Carve<uint8_t>(at, ROWS_CHUNK / 8);
        LocalTensor<uint8_t> outBits = Carve<uint8_t>(at, ROWS_CHUNK / 8);
        LocalTensor<uint8_t> tmpBits = Carve<uint8_t>(at, ROWS_CHUNK / 8);
        for (uint32_t c0 = r0; c0 < r1; c0 += ROWS_CHUNK) {
            const uint32_t m = r1 - c0 < ROWS_CHUNK ? r1 - c0 : ROWS_CHUNK;
            const uint32_t mA = Align(m, REPEAT_FLOATS);
            if (c0 > r0) {  // the last chunk's copies out have read the UB buffers refilled below
                SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
                WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
            }
            // Lanes past the last row hold target 0: the padding bits of the last mask byte are
            // computed as for target 0.
            Duplicate(tgt.template ReinterpretCast<int32_t>(), int32_t(0), int32_t(mA * sizeof(tgtT) / 4));
            SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
            DataCopyPad(tgt, targetGm_[c0], DataCopyExtParams(1, m * uint32_t(sizeof(tgtT)), 0, 0),
                        DataCopyPadExtParams<tgtT>(true, 0, 0, tgtT(0)));
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
            TargetToFloat(tf, tgt, mA);
            ShardBits(tf, inBits, tmpBits, mA);
            Not(outBits.template ReinterpretCast<uint16_t>(), inBits.template ReinterpretCast<uint16_t>(),
                int32_t(mA / 16));
            Adds(tf, tf, -float(t_->vocabStartIndex), int32_t(mA));
            Select(maskedF, inBits, tf, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, mA);
            Cast(masked, maskedF, RoundMode::CAST_RINT, mA);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            const DataCopyExtParams rows(1, m * uint32_t(sizeof(tgtT)), 0, 0);
            DataCopyPad(maskedWsGm_[c0], masked, rows);
            if constexpr (WRITE_OTHER_OUTPUTS) {
                DataCopyPad(maskedTargetGm_[c0], masked, rows);
                DataCopyPad(targetMaskGm_[c0 / 8], outBits, DataCopyExtParams(1, CeilDiv(m, 8), 0, 0));
            }
        }
    }

    // -- stage 3: CVProcess --------------------------------------------------------------------------------

    // Tile ``tile``: rows [m0, m0 + tm), columns [n0, n0 + tn).
    __aicore__ inline void TileOf(uint32_t tile, uint32_t& m0, uint32_t& tm, uint32_t& n0, uint32_t& tn) const {
        const uint32_t mi = tile / uint32_t(t_->nTilesN), ni = tile % uint32_t(t_->nTilesN);
        m0 = mi * uint32_t(t_->baseM);
        n0 = ni * uint32_t(t_->baseN);
        tm = bt_ - m0 < uint32_t(t_->baseM) ? bt_ - m0 : uint32_t(t_->baseM);
        tn = v_ - n0 < uint32_t(t_->baseN) ? v_ - n0 : uint32_t(t_->baseN);
    }

    // The first element of ping-pong buffer ``buf`` of cube core ``cube``.
    __aicore__ inline uint64_t TileBuffer(uint32_t cube, uint32_t buf) const {
        return (uint64_t(cube) * 2 + buf) * uint64_t(t_->baseM) * uint64_t(t_->baseN);
    }

    // The cube core: its tiles (tile t goes to cube core t % blockDim) into its ping-pong buffers,
    // each handed to the vector cores with the tile-ready flag.
    template <class MM, typename cT>
    __aicore__ inline void CVProcess(MM& mm, const GlobalTensor<cT>& tileGm) {
        const uint32_t cube = GetBlockIdx();
        const uint32_t nTiles = uint32_t(t_->nTilesM) * uint32_t(t_->nTilesN);
        mm.Init(&t_->mmTiling, &pipe_);
        // C rows baseN apart: a tile fills the top-left of its baseM x baseN buffer.
        mm.SetOrgShape(int(bt_), int(v_), int(h_), int(h_), t_->baseN);
        uint32_t k = 0;
        for (uint32_t tile = cube; tile < nTiles; tile += blockDim_, ++k) {
            const uint32_t buf = k % 2;
            if (k >= 2) {  // the buffer still holds tile k - 2 until both vector cores release it
                CrossCoreWaitFlag(buf == 0 ? FLAG_BUFFER_FREE0 : FLAG_BUFFER_FREE1);
            }
            uint32_t m0, tm, n0, tn;
            TileOf(tile, m0, tm, n0, tn);
            if (h_ > 0) {  // (H = 0: the logits are all zero, the vector cores take them so)
                mm.SetSingleShape(int(tm), int(tn), int(h_));
                mm.SetTensorA(inputGm_[uint64_t(m0) * h_]);
                mm.SetTensorB(weightGm_[uint64_t(n0) * h_], true);
                mm.IterateAll(tileGm[TileBuffer(cube, buf)]);
            }
            // Raised on PIPE_FIX: the vector cores are told once the tile has landed in GM.
            CrossCoreSetFlag<2, PIPE_FIX>(FLAG_TILE_READY);
        }
        // Take back the last releases, so that no flag is left set when the kernel ends.
        for (uint32_t last = k > 2 ? k - 2 : 0; last < k; ++last) {
            CrossCoreWaitFlag(last % 2 == 0 ? FLAG_BUFFER_FREE0 : FLAG_BUFFER_FREE1);
        }
        mm.End();
    }

    struct Cv {
        LocalTensor<inT> tileIn;
        LocalTensor<float> x, e, blk, rowMax, rowSum, runMax, runSum, tmp, gathered, bcast, tf, col, out;
        LocalTensor<tgtT> tgt;
        LocalTensor<int32_t> offset, rowIdx;
        LocalTensor<uint8_t> hitBits, tmpBits;
    };

    // A vector core: for each tile of its AI core, the online max / sum of its half of the tile's
    // rows [ra, rb), and the target logit gathered where it falls in the tile.
    __aicore__ inline void CVProcess() {
        const uint32_t vec = GetBlockIdx(), cube = vec / 2, sub = GetSubBlockIdx();
        const uint32_t nTiles = uint32_t(t_->nTilesM) * uint32_t(t_->nTilesN);
        const uint32_t halfM = uint32_t(t_->halfM), hmA = Align(halfM, REPEAT_FLOATS);
        const uint32_t wMax = Align(uint32_t(t_->baseN), REPEAT_FLOATS);
        const uint32_t tileBytes = uint32_t(sizeof(inT));
        uint32_t at = ub_.cv;
        Cv b;
        b.tileIn = Carve<inT>(at, halfM * wMax);
        b.x = Carve<float>(at, halfM * wMax);
        b.e = Carve<float>(at, halfM * wMax);
        b.blk = Carve<float>(at, halfM * wMax / 8);
        b.rowMax = Carve<float>(at, hmA);
        b.rowSum = Carve<float>(at, hmA);
        b.runMax = Carve<float>(at, hmA);
        b.runSum = Carve<float>(at, hmA);
        b.tmp = Carve<float>(at, hmA);
        b.gathered = Carve<float>(at, hmA);
        b.bcast = Carve<float>(at, Align(halfM, 8) * 8);
        b.tgt = Carve<tgtT>(at, hmA);
        b.tf = Carve<float>(at, hmA);
        b.col = Carve<float>(at, hmA);
        b.offset = Carve<int32_t>(at, hmA);
        b.rowIdx = Carve<int32_t>(at, hmA);
        b.out = Carve<float>(at, hmA);
        b.hitBits = Carve<uint8_t>(at, hmA / 8);
        b.tmpBits = Carve<uint8_t>(at, hmA / 8);
        uint32_t k = 0;
        for (uint32_t tile = cube; tile < nTiles; tile += blockDim_, ++k) {
            const uint32_t buf = k % 2;
            CrossCoreWaitFlag(FLAG_TILE_READY);
            uint32_t m0, tm, n0, tn;
            TileOf(tile, m0, tm, n0, tn);
            const uint32_t mid = m0 + (tm + 1) / 2;
            const uint32_t ra = sub == 0 ? m0 : mid, rb = sub == 0 ? mid : m0 + tm;
            const uint32_t nr = rb - ra;
            if (nr > 0) {
                const uint32_t w = Align(tn, REPEAT_FLOATS);  // this tile's row stride in UB, in elements
                const uint64_t first = TileBuffer(cube, buf) + uint64_t(ra - m0) * uint64_t(t_->baseN);
                const uint64_t stats = uint64_t(cube) * bt_ + ra;
                const DataCopyExtParams rows(1, nr * 4, 0, 0);
                if (k > 0) {
                    // The last tile's copies out have read the UB buffers (and landed in the GM rows
                    // read back below) before they are refilled.
                    SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
                    WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
                    SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
                    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
                }
                if (h_ == 0) {
                    Duplicate(b.x, 0.0f, int32_t(nr * w));
                } else if (t_->returnLogits) {
                    DataCopyPad(b.x, tileGmF_[first],
                                DataCopyExtParams(uint16_t(nr), tn * 4, (uint32_t(t_->baseN) - tn) * 4,
                                                  (w * 4 - Align(tn * 4, BLOCK)) / BLOCK),
                                DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
                } else {
                    DataCopyPad(b.tileIn, tileGm_[first],
                                DataCopyExtParams(uint16_t(nr), tn * tileBytes, (uint32_t(t_->baseN) - tn) * tileBytes,
                                                  (w * tileBytes - Align(tn * tileBytes, BLOCK)) / BLOCK),
                                DataCopyPadExtParams<inT>(false, 0, 0, inT(0.0f)));
                }
                DataCopyPad(b.runMax, onlineMaxGm_[stats], rows, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
                DataCopyPad(b.runSum, onlineSumGm_[stats], rows, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
                SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
                WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
                if (h_ > 0 && !t_->returnLogits) {
                    Cast(b.x, b.tileIn, RoundMode::CAST_NONE, nr * w);
                }
                if (t_->returnLogits && WRITE_OTHER_OUTPUTS) {  // the tile in the input dtype, out
                    Cast(b.tileIn, b.x, RoundMode::CAST_RINT, nr * w);
                    SetFlag<HardEvent::V_MTE3>(EVENT_ID1);
                    WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
                    DataCopyPad(vocabLogitsGm_[uint64_t(ra) * v_ + n0], b.tileIn,
                                DataCopyExtParams(uint16_t(nr), tn * tileBytes,
                                                  (w * tileBytes - Align(tn * tileBytes, BLOCK)) / BLOCK,
                                                  (v_ - tn) * tileBytes));
                }
                OnlineMaxSum(b, nr, tn, w);
                SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
                WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
                DataCopyPad(onlineMaxGm_[stats], b.rowMax, rows);
                DataCopyPad(onlineSumGm_[stats], b.runSum, rows);
                // The masked targets TargetProcess wrote, on this vector core and on others: only S1
                // orders this read after those writes.
                DataCopyPad(b.tgt, maskedWsGm_[ra], DataCopyExtParams(1, nr * uint32_t(sizeof(tgtT)), 0, 0),
                            DataCopyPadExtParams<tgtT>(false, 0, 0, tgtT(0)));
                SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
                WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
                TargetLogit(b, nr, Align(nr, REPEAT_FLOATS), n0, tn, w);
                SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
                WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
                if constexpr (CV_WRITES_PREDICTED) {
                    SetAtomicAdd<float>();
                    DataCopyPad(predictedGm_[ra], b.out, rows);
                    SetAtomicNone();
                }
            }
            CrossCoreSetFlag<2, PIPE_MTE3>(buf == 0 ? FLAG_BUFFER_FREE0 : FLAG_BUFFER_FREE1);
        }
    }

    // The rows' running max (into rowMax) and running sum (runSum) updated with this tile's nr x tn
    // logits in x (rows w floats apart; x keeps the logits, for the gather that follows).
    __aicore__ inline void OnlineMaxSum(Cv& b, uint32_t nr, uint32_t tn, uint32_t w) {
        if (tn < w) {  // columns [tn, w) take no part in the max and the sum
            uint64_t mask[2] = {~0ull << (tn % REPEAT_FLOATS), 0};
            Duplicate(b.x[w - REPEAT_FLOATS], LOWEST, mask, int64_t(nr), 1, uint8_t(w / 8));
        }
        RowReduce<ReduceType::MAX>(b.rowMax, b.blk, b.x, nr, w);
        Max(b.rowMax, b.runMax, b.rowMax, int32_t(nr));  // the new running max
        Sub(b.tmp, b.runMax, b.rowMax, int32_t(nr));
        Exp(b.tmp, b.tmp, int32_t(nr));
        Mul(b.runSum, b.runSum, b.tmp, int32_t(nr));  // the old sum, rescaled to the new max
        Brcb(b.bcast, b.rowMax, int64_t(CeilDiv(nr, 8)), BrcbRepeatParams(1, 8));
        for (uint32_t g = 0; g < w; g += REPEAT_FLOATS) {  // e = x - max: one 64-column group of every row a call
            Sub(b.e[g], b.x[g], b.bcast, uint64_t(REPEAT_FLOATS), int64_t(nr),
                BinaryRepeatParams(1, 1, 0, uint8_t(w / 8), uint8_t(w / 8), 1));
        }
        Exp(b.e, b.e, int32_t(nr * w));
        RowReduce<ReduceType::SUM>(b.rowSum, b.blk, b.e, nr, w);
        Add(b.runSum, b.runSum, b.rowSum, int32_t(nr));
    }

    // out[r] = x[r, masked[r] - n0] where that column is in this tile, else 0 (or, under a copy-dep
    // probe, the dependency itself).
    __aicore__ inline void TargetLogit(Cv& b, uint32_t nr, uint32_t nrA, uint32_t n0, uint32_t tn, uint32_t w) {
        ProbeBarrier();
        TargetToFloat(b.tf, b.tgt, nr);
        ProbeBarrier();
        if constexpr (COPIED_DEPENDENCY == 2) {  // masked_target as read here (small integers: exact sums)
            Adds(b.out, b.tf, 0.0f, int32_t(nr));
            return;
        }
        CreateVecIndex(b.rowIdx, int32_t(0), nr);
        ProbeBarrier();
        Muls(b.rowIdx, b.rowIdx, int32_t(w * 4), int32_t(nr));  // byte offset of each row in x
        ProbeBarrier();
        if constexpr (COPIED_DEPENDENCY == 1) {  // the cube result: the row's first logit, from its first tile
            if (n0 == 0) {
                Gather(b.out, b.x, b.rowIdx.template ReinterpretCast<uint32_t>(), 0, nr);
            } else {
                Duplicate(b.out, 0.0f, int32_t(nr));
            }
            return;
        }
        Adds(b.col, b.tf, -float(n0), int32_t(nr));  // the target's column in this tile
        ProbeBarrier();
        Compares(b.hitBits, b.col, 0.0f, CMPMODE::GE, nrA);
        ProbeBarrier();
        Compares(b.tmpBits, b.col, float(tn), CMPMODE::LT, nrA);
        ProbeBarrier();
        And(b.hitBits.template ReinterpretCast<uint16_t>(), b.hitBits.template ReinterpretCast<uint16_t>(),
            b.tmpBits.template ReinterpretCast<uint16_t>(), int32_t(nrA / 16));
        ProbeBarrier();
        Maxs(b.col, b.col, 0.0f, int32_t(nr));  // clamped, so that every lane gathers inside its row
        ProbeBarrier();
        Mins(b.col, b.col, float(tn - 1), int32_t(nr));
        ProbeBarrier();
        Cast(b.offset, b.col, RoundMode::CAST_RINT, nr);
        ProbeBarrier();
        Muls(b.offset, b.offset, int32_t(4), int32_t(nr));
        ProbeBarrier();
        Add(b.offset, b.offset, b.rowIdx, int32_t(nr));
        ProbeBarrier();
        Gather(b.gathered, b.x, b.offset.template ReinterpretCast<uint32_t>(), 0, nr);
        ProbeBarrier();
        Select(b.out, b.hitBits, b.gathered, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, nr);
        ProbeBarrier();
    }

    // Probe O7: a PipeBarrier<PIPE_ALL> (it drains this core's pipes; it orders no other core).
    __aicore__ inline void ProbeBarrier() {
        if constexpr (PIPE_BARRIERS) {
            PipeBarrier<PIPE_ALL>();
        }
    }

    // dst[r] = max (or sum) of row r of x (nr rows of w floats): per data block, then per row.
    template <ReduceType type>
    __aicore__ inline void RowReduce(const LocalTensor<float>& dst, const LocalTensor<float>& blk,
                                     const LocalTensor<float>& x, uint32_t nr, uint32_t w) {
        const uint32_t repeatsPerRow = w / REPEAT_FLOATS;
        const uint32_t rowsPerCall = 255 / repeatsPerRow;  // repeatTime is at most 255
        for (uint32_t r = 0; r < nr; r += rowsPerCall) {
            const uint32_t n = nr - r < rowsPerCall ? nr - r : rowsPerCall;
            if constexpr (type == ReduceType::MAX) {
                BlockReduceMax(blk[r * w / 8], x[r * w], int32_t(n * repeatsPerRow), int32_t(REPEAT_FLOATS), 1, 1, 8);
            } else {
                BlockReduceSum(blk[r * w / 8], x[r * w], int32_t(n * repeatsPerRow), int32_t(REPEAT_FLOATS), 1, 1, 8);
            }
        }
        if constexpr (type == ReduceType::MAX) {
            WholeReduceMax(dst, blk, int32_t(w / 8), int32_t(nr), 1, 1, int32_t(w / 64), ReduceOrder::ORDER_ONLY_VALUE);
        } else {
            WholeReduceSum(dst, blk, int32_t(w / 8), int32_t(nr), 1, 1, int32_t(w / 64));
        }
    }

    // -- stage 4: AllReduceProcess (vector) -----------------------------------------------------------------

    __aicore__ inline void AllReduceProcess() {
        uint32_t r0, r1;
        VectorRows(GetBlockIdx(), r0, r1);
        uint32_t at = ub_.cv;
        LocalTensor<float> maxes = Carve<float>(at, blockDim_ * ROWS_CHUNK);
        LocalTensor<float> sums = Carve<float>(at, blockDim_ * ROWS_CHUNK);
        LocalTensor<tgtT> tgt = Carve<tgtT>(at, ROWS_CHUNK);
        LocalTensor<float> tf = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<float> raw = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<float> globalMax = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<float> total = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<float> tmp = Carve<float>(at, ROWS_CHUNK);
        LocalTensor<uint8_t> inBits = Carve<uint8_t>(at, ROWS_CHUNK / 8);
        LocalTensor<uint8_t> tmpBits = Carve<uint8_t>(at, ROWS_CHUNK / 8);
        for (uint32_t c0 = r0; c0 < r1; c0 += ROWS_CHUNK) {
            const uint32_t m = r1 - c0 < ROWS_CHUNK ? r1 - c0 : ROWS_CHUNK;
            const uint32_t mA = Align(m, REPEAT_FLOATS), m8 = Align(m, 8);
            if (c0 > r0) {
                SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
                WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
                SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
                WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
            }
            // One row of partials per cube core, rows m8 floats apart in UB.
            const DataCopyExtParams partials(uint16_t(blockDim_), m * 4, (bt_ - m) * 4, 0);
            DataCopyPad(maxes, onlineMaxGm_[c0], partials, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
            DataCopyPad(sums, onlineSumGm_[c0], partials, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
            DataCopyPad(tgt, targetGm_[c0], DataCopyExtParams(1, m * uint32_t(sizeof(tgtT)), 0, 0),
                        DataCopyPadExtParams<tgtT>(false, 0, 0, tgtT(0)));
            DataCopyPad(raw, predictedGm_[c0], DataCopyExtParams(1, m * 4, 0, 0),
                        DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
            SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
            WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
            // max = max_c max_c; sum = sum_c sum_c * exp(max_c - max)
            Adds(globalMax, maxes, 0.0f, int32_t(m));
            for (uint32_t c = 1; c < blockDim_; ++c) {
                Max(globalMax, globalMax, maxes[c * m8], int32_t(m));
            }
            for (uint32_t c = 0; c < blockDim_; ++c) {
                const LocalTensor<float>& term = c == 0 ? total : tmp;
                Sub(term, maxes[c * m8], globalMax, int32_t(m));
                Exp(term, term, int32_t(m));
                Mul(term, term, sums[c * m8], int32_t(m));
                if (c > 0) Add(total, total, tmp, int32_t(m));
            }
            // predicted = raw - max where the target is in the shard, else 0
            TargetToFloat(tf, tgt, mA);
            ShardBits(tf, inBits, tmpBits, mA);
            Sub(raw, raw, globalMax, int32_t(m));
            Select(raw, inBits, raw, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, m);
            SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
            WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
            const DataCopyExtParams rows(1, m * 4, 0, 0);
            if constexpr (WRITE_OTHER_OUTPUTS) {
                DataCopyPad(logitsMaxGm_[c0], globalMax, rows);
                DataCopyPad(sumExpGm_[c0], total, rows);
            }
            if constexpr (ALLREDUCE_WRITES_PREDICTED) {
                DataCopyPad(predictedGm_[c0], raw, rows);
            }
        }
    }

    const FlomsTilingData* t_ = nullptr;
    uint32_t bt_ = 0, h_ = 0, v_ = 0, blockDim_ = 0, nVector_ = 0;
    UbLayout ub_{};
    TPipe pipe_;
    TBuf<TPosition::VECCALC> ubBuf_;
    GlobalTensor<inT> inputGm_, weightGm_, vocabLogitsGm_, tileGm_;
    GlobalTensor<float> tileGmF_, logitsMaxGm_, sumExpGm_, predictedGm_, onlineMaxGm_, onlineSumGm_;
    GlobalTensor<tgtT> targetGm_, maskedTargetGm_, maskedWsGm_;
    GlobalTensor<uint8_t> targetMaskGm_;
    using aType = MatmulType<TPosition::GM, CubeFormat::ND, inT>;
    using bType = MatmulType<TPosition::GM, CubeFormat::ND, inT, true>;
    using biasType = MatmulType<TPosition::GM, CubeFormat::ND, float>;
    matmul::MatmulImpl<aType, bType, MatmulType<TPosition::GM, CubeFormat::ND, inT>, biasType, CFG_NORM> mm_;
    matmul::MatmulImpl<aType, bType, MatmulType<TPosition::GM, CubeFormat::ND, float>, biasType, CFG_NORM> mmFloat_;
};

}  // namespace floms

extern "C" __global__ __aicore__ void fused_linear_online_max_sum(GM_ADDR input, GM_ADDR weight, GM_ADDR target,
                                                                  GM_ADDR logitsMax, GM_ADDR sumExpLogits,
                                                                  GM_ADDR predictedLogits, GM_ADDR targetMask,
                                                                  GM_ADDR maskedTarget, GM_ADDR vocabParallelLogits,
                                                                  GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    GET_TILING_DATA_WITH_STRUCT(FlomsTilingData, tilingData, tiling);
    floms::FusedLinearOnlineMaxSum<DTYPE_INPUT, DTYPE_TARGET> op;
    op.Init(input, weight, target, logitsMax, sumExpLogits, predictedLogits, targetMask, maskedTarget,
            vocabParallelLogits, workspace, &tilingData);
    op.Process();
}
