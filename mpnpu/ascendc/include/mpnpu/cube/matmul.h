// The matmul API: Matmul<A, B, C, BIAS, MM_CFG> and MatmulImpl<...> (lib/matmul_intf.h).
//
//   MatmulImpl   computes on the cube core that calls it (a cube core of a mix or cube-only kernel).
//   Matmul       on a vector core of a mix kernel, after REGIST_MATMUL_OBJ: a client of its cube
//                core (mpnpu/cube/matmul_kfc.h); on that cube core REGIST_MATMUL_OBJ serves the
//                vector cores until both are done with it (End after their last use, the kernel
//                function ending), then returns from the kernel (the
//                matmul calls after it would run on the vector cores only, so on a cube core that
//                served they do nothing). In a cube-only kernel Matmul computes like MatmulImpl.
//
// Setters (SetOrgShape, SetSingleShape, SetTail, SetTensorA/B, SetBias, DisableBias) change this
// core's copy of the setup; Iterate, GetTensorC, IterateAll and End do the work (the computation
// and its GM accesses: mpnpu/cube/matmul_engine.h). What is not implemented is refused: at compile
// time where the template arguments say so (when an object of the form is constructed), else at the
// call's kernel line (mpnpu::unsupported).
#ifndef MPNPU_CUBE_MATMUL_H
#define MPNPU_CUBE_MATMUL_H

#include <cstdint>
#include <exception>
#include <type_traits>
#include <vector>

#include "../../kernel_tiling/kernel_tiling.h"
#include "../native/rt.h"
#include "../sync.h"
#include "../tensor.h"
#include "../tpipe.h"
#include "basic.h"
#include "matmul_config.h"
#include "matmul_engine.h"
#include "matmul_kfc.h"

#ifndef __kfc_workspace__
#define __kfc_workspace__
#endif

namespace mpnpu {
namespace mm {

// A B of SparseMatmulType (matmul_config.h).
template <class T, class = void>
struct is_sparse : std::false_type {};
template <class T>
struct is_sparse<T, std::void_t<decltype(T::mpnpu_sparse)>> : std::bool_constant<T::mpnpu_sparse> {};

template <class X>
constexpr bool gm_or(AscendC::TPosition p) {
    return X::pos == AscendC::TPosition::GM || X::pos == p;
}

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE, const auto& MM_CFG, class MM_CB, class MM_POLICY,
          bool kClients>
class MatmulCore : public Registrable {
    // MM_CFG: a MatmulConfig, or a MatmulApiStaticTiling (its cfg; its shapes in place of a tiling)
    static constexpr bool kStatic = std::is_same_v<std::decay_t<decltype(MM_CFG)>, AscendC::MatmulApiStaticTiling>;
    static constexpr AscendC::MatmulConfig kCfg = AscendC::ToMatmulConfig(MM_CFG);

public:
    using SrcAT = typename A_TYPE::T;
    using SrcBT = typename B_TYPE::T;
    using DstT = typename C_TYPE::T;
    using BiasT = typename BIAS_TYPE::T;
    using L0cT = acc_t<SrcAT, SrcBT, BiasT>;
    // A TSCM tensor holds NZ (the layout the cube loads from L1) whatever its MatmulType's format says:
    // public kernels give a TSCM type CubeFormat::ND and fill its L1 tensor with an ND -> NZ copy.
    static constexpr bool kNzA = A_TYPE::format == CubeFormat::NZ || A_TYPE::pos == AscendC::TPosition::TSCM;
    static constexpr bool kNzB = B_TYPE::format == CubeFormat::NZ || B_TYPE::pos == AscendC::TPosition::TSCM;
    static constexpr bool kNzC = C_TYPE::format == CubeFormat::NZ && C_TYPE::pos != AscendC::TPosition::CO1;
    static constexpr bool kSparseB = is_sparse<B_TYPE>::value;
    using kPolicy = AscendC::Impl::Detail::MpnpuPolicy;
    static constexpr kPolicy kPol = MM_POLICY::mpnpu_policy;
    // A batch layout that cuts rows out of a wider array (a matrix's rows are not contiguous)
    static constexpr bool kLayoutSD = A_TYPE::layout == LayoutMode::BSNGD || A_TYPE::layout == LayoutMode::SBNGD;

    // The forms mpnpu refuses, checked where an object is constructed (not where the class is named:
    // public kernels name every form in if-constexpr branches their tiling key leaves out).
    MatmulCore() {
        static_assert(std::is_same_v<std::decay_t<decltype(MM_CFG)>, AscendC::MatmulConfig> || kStatic,
                      "MM_CFG is a MatmulConfig or a MatmulApiStaticTiling");
        // MatmulCallBackFunc: the forms mpnpu calls the user's copy routines for (compute, store, cb_operand)
        static_assert(!MM_CB::mpnpu_has_a1 || (A_TYPE::pos == AscendC::TPosition::GM &&
                                               A_TYPE::format == CubeFormat::ND && !A_TYPE::isTrans),
                      "MatmulCallBackFunc's CopyA1: mpnpu calls it for an A in GM, CubeFormat::ND, not transposed "
                      "(A's MatmulType with ISTRANS false); other A forms with a CopyA1 are not supported");
        static_assert(!MM_CB::mpnpu_has_b1 || (B_TYPE::pos == AscendC::TPosition::GM &&
                                               B_TYPE::format == CubeFormat::ND && !B_TYPE::isTrans),
                      "MatmulCallBackFunc's CopyB1: mpnpu calls it for a B in GM, CubeFormat::ND, not transposed "
                      "(B's MatmulType with ISTRANS false); other B forms with a CopyB1 are not supported");
        static_assert(!MM_CB::mpnpu_has_out || (C_TYPE::pos == AscendC::TPosition::GM &&
                                                (C_TYPE::format == CubeFormat::ND ||
                                                 C_TYPE::format == CubeFormat::ND_ALIGN)),
                      "MatmulCallBackFunc's DataCopyOut: mpnpu calls it for a C in GM, CubeFormat::ND or ND_ALIGN; "
                      "other C forms with a DataCopyOut are not supported");
        static_assert(MM_CB::mpnpu_none || (!std::is_same_v<SrcAT, ::int4b_t> && !kCfg.isPartialOutput),
                      "MatmulCallBackFunc with int4b_t A and B or with MatmulConfig isPartialOutput is not "
                      "supported by mpnpu");
        static_assert(gm_or<A_TYPE>(AscendC::TPosition::TSCM) && gm_or<B_TYPE>(AscendC::TPosition::TSCM),
                      "mpnpu's Matmul reads A and B from GM or TSCM (VECOUT inputs are not implemented)");
        static_assert((A_TYPE::format == CubeFormat::ND || A_TYPE::format == CubeFormat::NZ ||
                       A_TYPE::format == CubeFormat::VECTOR) &&
                          (B_TYPE::format == CubeFormat::ND || B_TYPE::format == CubeFormat::NZ),
                      "mpnpu's Matmul takes A in CubeFormat::ND, NZ or VECTOR and B in CubeFormat::ND or NZ");
        static_assert(C_TYPE::format == CubeFormat::ND || C_TYPE::format == CubeFormat::ND_ALIGN ||
                          C_TYPE::format == CubeFormat::NZ,
                      "mpnpu's Matmul writes C in CubeFormat::ND, ND_ALIGN or NZ");
        // C in UB may be named by any of its vector positions (the pages' examples use VECIN and VECCALC)
        static_assert(gm_or<C_TYPE>(AscendC::TPosition::VECIN) || C_TYPE::pos == AscendC::TPosition::VECCALC ||
                          C_TYPE::pos == AscendC::TPosition::VECOUT || C_TYPE::pos == AscendC::TPosition::CO1,
                      "mpnpu's Matmul writes C to GM, UB (VECIN, VECCALC, VECOUT) or a CO1 tensor");
        static_assert(A_TYPE::layout == B_TYPE::layout, "batch matmul: A and B have the same LayoutMode");
        static_assert(!kLayoutSD || (A_TYPE::format == CubeFormat::ND && B_TYPE::format == CubeFormat::ND),
                      "batch matmul: the BSNGD and SBNGD layouts take A and B in CubeFormat::ND");
        static_assert(!kCfg.intraBlockPartSum,
                      "MatmulConfig: intraBlockPartSum is not implemented by mpnpu (nor on this chip class)");
        // the 4:2 sparse matmul guide's forms (its B: GM, int8_t, ND or NZ, ISTRANS true, no batch layout or
        // IBShare); mpnpu also serves it to vector cores (a public kernel's unit test asks for that)
        static_assert(!kSparseB || (std::is_same_v<SrcBT, int8_t> && B_TYPE::pos == AscendC::TPosition::GM &&
                                    B_TYPE::isTrans && B_TYPE::layout == LayoutMode::NONE && !B_TYPE::ibShare),
                      "SparseMatmulType: B is int8_t in GM, ISTRANS true, LayoutMode::NONE, IBSHARE false (the 4:2 "
                      "sparse matmul guide)");
        static_assert(!kSparseB || (MM_CB::mpnpu_none && !kCfg.isPartialOutput && A_TYPE::pos == AscendC::TPosition::GM),
                      "SparseMatmulType: mpnpu takes A in GM, without MatmulCallBackFunc or isPartialOutput");
        static_assert(!kCfg.isPartialOutput || (!kNzA && !kNzB),
                      "MatmulConfig isPartialOutput: mpnpu takes A and B in CubeFormat::ND (GM) with it");
        static_assert(MM_POLICY::mpnpu_policy != kPolicy::NBUFFER33 ||
                          (A_TYPE::pos == AscendC::TPosition::GM && B_TYPE::pos == AscendC::TPosition::GM),
                      "NBuffer33MatmulPolicy takes A and B in GM (its page)");
        static_assert(std::is_same_v<SrcAT, SrcBT>, "A and B must have the same element type");
        static_assert(std::is_same_v<SrcAT, half> || std::is_same_v<SrcAT, bfloat16_t> || std::is_same_v<SrcAT, float> ||
                          std::is_same_v<SrcAT, int8_t> || std::is_same_v<SrcAT, ::int4b_t>,
                      "A and B are half, bfloat16_t, float, int8_t or int4b_t");
        static_assert(!std::is_same_v<SrcAT, ::int4b_t> ||
                          (A_TYPE::format == CubeFormat::ND && B_TYPE::format == CubeFormat::ND &&
                           A_TYPE::pos == AscendC::TPosition::GM && B_TYPE::pos == AscendC::TPosition::GM),
                      "mpnpu's int4b_t Matmul takes A and B in GM, CubeFormat::ND");
        std::memset(static_cast<void*>(&setup_), 0, sizeof setup_);
    }
    MatmulCore(const MatmulCore&) = delete;
    MatmulCore& operator=(const MatmulCore&) = delete;
    // The last registered object of a vector core going away: the kernel is done with the matmul.
    ~MatmulCore() noexcept(false) override {
        if (!client_reg_) return;
        Client& c = client();
        if (--c.alive == 0 && std::uncaught_exceptions() == 0) finish_client();
    }

    // -- set-up --------------------------------------------------------------------------------------

    void Init(const TCubeTiling* __restrict cubeTiling, AscendC::TPipe* tpipe = nullptr, MPNPU_SITE) {
        at(site);
        (void)tpipe;
        if (!cubeTiling) {
            if constexpr (kStatic) {
                mpnpu_init_static(site);
                return;
            }
            api_error(site, "Matmul::Init: the tiling is a null pointer");
        }
        init_setup(setup_, *cubeTiling);
        // A constant tiling's base blocks are the ones the kernel was built with (the page: they must
        // equal the runtime tiling's)
        if constexpr (kStatic) {
            if (MM_CFG.baseM > 0) setup_.tiling.baseM = MM_CFG.baseM;
            if (MM_CFG.baseN > 0) setup_.tiling.baseN = MM_CFG.baseN;
            if (MM_CFG.baseK > 0) setup_.tiling.baseK = MM_CFG.baseK;
        }
        // With ScheduleType::OUTER_PRODUCT the configuration's iterateOrder is the order of C's base
        // blocks (MatmulConfig's page), in place of the tiling's.
        if constexpr (kCfg.scheduleType == AscendC::ScheduleType::OUTER_PRODUCT &&
                      kCfg.iterateOrder != AscendC::IterateOrder::UNDEF)
            setup_.tiling.iterateOrder = kCfg.iterateOrder == AscendC::IterateOrder::ORDER_N ? 1 : 0;
        cursor_ = 0;
    }
    // A fully constant MatmulApiStaticTiling in place of a tiling (REGIST_MATMUL_OBJ with a null one).
    void mpnpu_init_static(const Site& site) {
        if constexpr (kStatic) {
            if (MM_CFG.singleCoreM <= 0 || MM_CFG.singleCoreN <= 0 || MM_CFG.singleCoreK <= 0)
                api_error(site, "Matmul: no tiling, and the MatmulApiStaticTiling does not fix singleCoreM/N/K "
                                "(only a fully constant one stands for the tiling)");
            TCubeTiling t{};
            t.usedCoreNum = 1;
            t.M = MM_CFG.M;
            t.N = MM_CFG.N;
            t.Ka = MM_CFG.Ka;
            t.Kb = MM_CFG.Kb;
            t.singleCoreM = MM_CFG.singleCoreM;
            t.singleCoreN = MM_CFG.singleCoreN;
            t.singleCoreK = MM_CFG.singleCoreK;
            t.baseM = MM_CFG.baseM;
            t.baseN = MM_CFG.baseN;
            t.baseK = MM_CFG.baseK;
            t.depthA1 = MM_CFG.depthA1;
            t.depthB1 = MM_CFG.depthB1;
            t.stepM = MM_CFG.stepM;
            t.stepN = MM_CFG.stepN;
            t.stepKa = MM_CFG.stepKa;
            t.stepKb = MM_CFG.stepKb;
            t.isBias = MM_CFG.isBias;
            t.iterateOrder = MM_CFG.iterateOrder;
            t.dbL0A = MM_CFG.dbL0A;
            t.dbL0B = MM_CFG.dbL0B;
            t.dbL0C = MM_CFG.dbL0C;
            init_setup(setup_, t);
            cursor_ = 0;
        } else {
            (void)site;
        }
    }
    void SetOrgShape(int orgM, int orgN, int orgK, MPNPU_SITE) { SetOrgShape(orgM, orgN, orgK, orgK, 0, site); }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0, MPNPU_SITE) {
        at(site);
        setup_.orgM = orgM;
        setup_.orgN = orgN;
        setup_.orgKa = orgKa;
        setup_.orgKb = orgKb;
        setup_.orgKc = orgKc;
    }
    void SetSingleShape(int singleM, int singleN, int singleK, MPNPU_SITE) {
        at(site);
        setup_.singleM = singleM;
        setup_.singleN = singleN;
        setup_.singleK = singleK;
        cursor_ = 0;
    }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1, MPNPU_SITE) {
        at(site);
        if (tailM > 0) setup_.singleM = tailM;
        if (tailN > 0) setup_.singleN = tailN;
        if (tailK > 0) setup_.singleK = tailK;
        cursor_ = 0;
    }
    void SetTensorA(const AscendC::GlobalTensor<SrcAT>& gm, bool isTransposeA = false, MPNPU_SITE) {
        set_matrix<A_TYPE>(side_a(), 'A', gm.mpnpu_base(), gm.mpnpu_addr(), isTransposeA, nullptr, site);
    }
    // A TSCM tensor (L1, NZ): the matrix the single-core computation reads, whole (as a GM one).
    void SetTensorA(const AscendC::LocalTensor<SrcAT>& leftMatrix, bool isTransposeA = false, MPNPU_SITE) {
        set_matrix<A_TYPE>(side_a(), 'A', nullptr, leftMatrix.mpnpu_addr(), isTransposeA, &leftMatrix, site);
    }
    void SetTensorA(SrcAT aScalar, MPNPU_SITE) {
        (void)aScalar;
        unsupported(site, "Matmul::SetTensorA with a scalar");
    }
    void SetTensorB(const AscendC::GlobalTensor<SrcBT>& gm, bool isTransposeB = false, MPNPU_SITE) {
        set_matrix<B_TYPE>(side_b(), 'B', gm.mpnpu_base(), gm.mpnpu_addr(), isTransposeB, nullptr, site);
    }
    void SetTensorB(const AscendC::LocalTensor<SrcBT>& rightMatrix, bool isTransposeB = false, MPNPU_SITE) {
        set_matrix<B_TYPE>(side_b(), 'B', nullptr, rightMatrix.mpnpu_addr(), isTransposeB, &rightMatrix, site);
    }
    void SetTensorB(SrcBT bScalar, MPNPU_SITE) {
        (void)bScalar;
        unsupported(site, "Matmul::SetTensorB with a scalar");
    }
    // The index matrix of a 4:2 sparse B (uint8_t in GM, the Zn layout: mpnpu/cube/matmul_engine.h).
    template <typename IndexT>
    void SetSparseIndex(const AscendC::GlobalTensor<IndexT>& indexGlobal, MPNPU_SITE) {
        static_assert(sizeof(IndexT) == 1, "SetSparseIndex takes the index matrix as bytes (uint8_t)");
        if constexpr (!kSparseB)
            api_error(site, "Matmul::SetSparseIndex: B is not a SparseMatmulType (the 4:2 sparse matmul's B type)");
        at(site);
        setup_.idx_base = reinterpret_cast<const uint8_t*>(indexGlobal.mpnpu_base());
        setup_.idx = reinterpret_cast<const uint8_t*>(indexGlobal.mpnpu_addr());
        setup_.idx_file = rel(site.file);
        setup_.idx_line = site.line;
    }
    // (BIAS_TYPE defaults to C_TYPE, so a Matmul with C in VECIN and no bias names a VECIN bias type:
    // refused only where a bias is set)
    void SetBias(const AscendC::GlobalTensor<BiasT>& biasGlobal, MPNPU_SITE) {
        static_assert(BIAS_TYPE::pos == AscendC::TPosition::GM,
                      "mpnpu's Matmul reads the bias from GM (BIAS_TYPE's position GM)");
        at(site);
        setup_.bias_base = reinterpret_cast<const uint8_t*>(biasGlobal.mpnpu_base());
        setup_.bias = reinterpret_cast<const uint8_t*>(biasGlobal.mpnpu_addr());
        setup_.hasBias = 1;
    }
    void SetBias(const AscendC::LocalTensor<BiasT>& inputBias, MPNPU_SITE) {
        (void)inputBias;
        unsupported(site, "Matmul::SetBias with a LocalTensor (mpnpu's Matmul reads the bias from GM)");
    }
    void DisableBias(MPNPU_SITE) {
        at(site);
        setup_.hasBias = 0;
    }
    void ClearBias(MPNPU_SITE) { DisableBias(site); }
    // The workspaces of asynchronous Iterate and of the vector ND2NZ path: nothing for mpnpu to keep.
    // (IterateNBatch writes its C there)
    template <class T>
    void SetWorkspace(AscendC::GlobalTensor<T>& addr, MPNPU_SITE) {
        at(site);
        ws_base_ = reinterpret_cast<uint8_t*>(addr.mpnpu_base());
        ws_ = reinterpret_cast<uint8_t*>(addr.mpnpu_addr());
    }
    template <class T>
    void SetWorkspace(const T* addr, int size, MPNPU_SITE) {
        at(site);
        (void)size;
        ws_base_ = ws_ = reinterpret_cast<uint8_t*>(const_cast<T*>(addr));
    }
    void SetLocalWorkspace(const AscendC::LocalTensor<uint8_t>& tmpBuffer, MPNPU_SITE) {
        at(site);
        (void)tmpBuffer;
    }
    void SetHF32(bool enableHF32 = false, int32_t transMode = 0, MPNPU_SITE) {
        (void)transMode;
        if (enableHF32) unsupported(site, "Matmul::SetHF32(true) (mpnpu multiplies float inputs in float32)");
    }
    void SetSubBlockIdx(uint8_t subBlockIdx, MPNPU_SITE) {
        at(site);
        sub_block_ = subBlockIdx;
    }
    uint8_t GetSubBlockIdx() const { return sub_block_; }
    // The (de)quantisation of C on its way out (mpnpu/cube/matmul_engine.h, quantize): int8_t A and B
    // with a half, bfloat16_t or int8_t C, or half / bfloat16_t A and B with an int8_t C. Kept until Init
    // or the other setter.
    void SetQuantScalar(const uint64_t quantScalar, MPNPU_SITE) {
        check_quant(site, "Matmul::SetQuantScalar");
        setup_.quant_mode = 1;
        setup_.quant_scalar = quantScalar;
        setup_.quant_base = setup_.quant = nullptr;
    }
    void SetQuantVector(const AscendC::GlobalTensor<uint64_t>& quantTensor, MPNPU_SITE) {
        check_quant(site, "Matmul::SetQuantVector");
        setup_.quant_mode = 2;
        setup_.quant_base = reinterpret_cast<const uint8_t*>(quantTensor.mpnpu_base());
        setup_.quant = reinterpret_cast<const uint8_t*>(quantTensor.mpnpu_addr());
    }
    void SetQuantVector(const AscendC::LocalTensor<uint64_t>& quantTensor, MPNPU_SITE) {
        (void)quantTensor;
        unsupported(site, "Matmul::SetQuantVector with a LocalTensor (mpnpu reads the parameters from GM)");
    }
    // -- batch matmul --------------------------------------------------------------------------------------
    //
    // IterateBatch computes max(batchA, batchB) matrices C_j = A_j x B_j (+ bias) of singleM x singleN
    // over singleK, each as IterateAll would, the matrices found by the layout of A_TYPE / B_TYPE /
    // C_TYPE (mpnpu/cube/matmul_engine.h, layout_at; NORMAL: one after another, matrixStrideA / B
    // elements apart when given, else a whole orgM x orgKa / orgKb x orgN matrix) from the tensors
    // SetTensorA / SetTensorB / the call give. When batchA and batchB differ the smaller side is
    // broadcast: C_j takes A_(j / (batchC / batchA)) and B_(j / (batchC / batchB)) (each a divisor of
    // batchC; mpnpu's reading of "broadcast along G"). The bias (SetBias) is one row of N per C matrix
    // (MatmulConfig isBiasBatch, the default) or one row for all (isBiasBatch false). IterateNBatch
    // does batchLoop such calls one after another, each taking the next batchA / batchB / batchC
    // matrices, and writes C to SetWorkspace's tensor. Not implemented: enSequentialWrite,
    // enPartialSum, C to a LocalTensor, NZ operands of a batch.
    void SetBatchNum(int32_t batchA, int32_t batchB, MPNPU_SITE) {
        at(site);
        batch_a_ = batchA;
        batch_b_ = batchB;
    }
    // (a vector core of a mix kernel)
    template <bool sync = true, bool waitIterateBatch = false>
    void IterateBatch(const AscendC::GlobalTensor<DstT>& gm, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                      const uint32_t matrixStrideA = 0, const uint32_t matrixStrideB = 0,
                      const uint32_t matrixStrideC = 0, const bool enPartialSum = false, const uint8_t enAtomic = 0,
                      MPNPU_SITE) {
        (void)matrixStrideC;
        batch_call(reinterpret_cast<const uint8_t*>(gm.mpnpu_base()), gm.mpnpu_addr(), batchA, batchB, 1,
                   enSequentialWrite, matrixStrideA, matrixStrideB, enPartialSum, enAtomic, sync, site,
                   "Matmul::IterateBatch");
    }
    // (pure cube mode: the batch numbers of SetBatchNum, else the tiling's BatchNum for both)
    template <class P, class Q, std::enable_if_t<std::is_same_v<P, bool>, int> = 0>
    void IterateBatch(const AscendC::GlobalTensor<DstT>& gm, P enPartialSum, Q enAtomic, bool enSequentialWrite,
                      const uint32_t matrixStrideA = 0, const uint32_t matrixStrideB = 0,
                      const uint32_t matrixStrideC = 0, MPNPU_SITE) {
        (void)matrixStrideC;
        const int32_t ba = batch_a_ > 0 ? batch_a_ : setup_.tiling.BatchNum;
        const int32_t bb = batch_b_ > 0 ? batch_b_ : setup_.tiling.BatchNum;
        batch_call(reinterpret_cast<const uint8_t*>(gm.mpnpu_base()), gm.mpnpu_addr(), uint32_t(ba), uint32_t(bb), 1,
                   enSequentialWrite, matrixStrideA, matrixStrideB, enPartialSum, uint8_t(enAtomic), true, site,
                   "Matmul::IterateBatch");
    }
    template <bool sync = true>
    void IterateBatch(const AscendC::LocalTensor<DstT>& ubCmatrix, uint32_t batchA, uint32_t batchB,
                      bool enSequentialWrite, const uint32_t matrixStrideA = 0, const uint32_t matrixStrideB = 0,
                      const uint32_t matrixStrideC = 0, const bool enPartialSum = false, const uint8_t enAtomic = 0,
                      MPNPU_SITE) {
        (void)ubCmatrix, (void)batchA, (void)batchB, (void)enSequentialWrite, (void)matrixStrideA;
        (void)matrixStrideB, (void)matrixStrideC, (void)enPartialSum, (void)enAtomic;
        unsupported(site, "Matmul::IterateBatch to a LocalTensor (mpnpu's IterateBatch writes C to GM)");
    }
    template <bool sync = true, bool waitIterateBatch = false>
    void IterateNBatch(const uint32_t batchLoop, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                       const uint32_t matrixStrideA = 0, const uint32_t matrixStrideB = 0,
                       const uint32_t matrixStrideC = 0, MPNPU_SITE) {
        static_assert(kCfg.isNBatch, "IterateNBatch needs MatmulConfig isNBatch = true (MatmulBatchParams)");
        (void)matrixStrideC;
        at(site);
        if (served_) return;
        if (!ws_) api_error(site, "Matmul::IterateNBatch: no workspace for C (SetWorkspace first)");
        nbatch_next_ = 0;
        nbatch_a_ = batchA;
        nbatch_b_ = batchB;
        nbatch_loops_ = batchLoop;
        batch_call(ws_base_, reinterpret_cast<DstT*>(ws_), batchA, batchB, batchLoop, enSequentialWrite,
                   matrixStrideA, matrixStrideB, false, 0, sync, site, "Matmul::IterateNBatch");
    }
    // After IterateNBatch<false>: C of the next of its batchLoop calls, as a view of the workspace
    // starting at that call's first C matrix (where the layout puts it).
    template <bool sync = true>
    AscendC::GlobalTensor<DstT> GetBatchTensorC(uint32_t batchA, uint32_t batchB, bool enSequentialWrite = false,
                                                MPNPU_SITE) {
        at(site);
        (void)enSequentialWrite;
        AscendC::GlobalTensor<DstT> r;
        if (served_) return r;
        if (sync) unsupported(site, "Matmul::GetBatchTensorC<true> (the pages give the asynchronous form only)");
        if (nbatch_next_ < 0 || nbatch_next_ >= int64_t(nbatch_loops_))
            api_error(site, "Matmul::GetBatchTensorC: no IterateNBatch<false> has results left to get");
        if (batchA != nbatch_a_ || batchB != nbatch_b_)
            api_error(site, "Matmul::GetBatchTensorC: batchA / batchB (%u, %u) differ from IterateNBatch's (%u, %u)",
                      batchA, batchB, nbatch_a_, nbatch_b_);
        WaitIterateBatch(site);
        const int64_t batchC = batchA > batchB ? batchA : batchB;
        const BatchAt at_c = c_batch_at(setup_, nbatch_next_ * batchC);
        r.mpnpu_set(reinterpret_cast<DstT*>(ws_base_), reinterpret_cast<DstT*>(ws_) + at_c.off, 0);
        if (++nbatch_next_ >= int64_t(nbatch_loops_)) nbatch_next_ = -1;
        return r;
    }
    template <bool sync = true>
    void GetBatchTensorC(const AscendC::LocalTensor<DstT>& c, uint32_t batchA, uint32_t batchB,
                         bool enSequentialWrite = false, MPNPU_SITE) {
        (void)c, (void)batchA, (void)batchB, (void)enSequentialWrite;
        unsupported(site, "Matmul::GetBatchTensorC to a LocalTensor");
    }
    void WaitIterateBatch(MPNPU_SITE) { WaitIterateAll(site); }
    // The values handed to MatmulCallBackFunc's copy routines as tilingPtr and dataPtr (kept until set
    // again; 0 before). (The SetSelfDefineData(T) form is not on this chip class.)
    void SetUserDefInfo(const uint64_t tilingPtr, MPNPU_SITE) {
        at(site);
        user_def_info_ = tilingPtr;
    }
    void SetSelfDefineData(const uint64_t dataPtr, MPNPU_SITE) {
        at(site);
        self_define_data_ = dataPtr;
    }

    // -- computing ----------------------------------------------------------------------------------------

    // Iterate<false>(): the asynchronous form, called once; then GetTensorC<false> gets the tiles one
    // by one, in Iterate's order. mpnpu computes each tile when its GetTensorC<false> asks for it (the
    // same values; the cube working ahead into the workspace meanwhile is not modelled).
    template <bool sync = true>
    bool Iterate(bool enPartialSum = false, MPNPU_SITE) {
        static_assert(sync ? kPol != kPolicy::TRIAN_UPPER && kPol != kPolicy::TRIAN_LOWER : true,
                      "mpnpu's TrianUpperMatmulPolicy / TrianLowerMatmulPolicy take IterateAll (not Iterate)");
        at(site);
        if (!sync) {
            if (served_) return false;
            if (enPartialSum) unsupported(site, "Matmul::Iterate<false> with enPartialSum");
            check_form(setup_, site, "Matmul::Iterate<false>");
            async_next_ = 0;
            return true;
        }
        if (served_) return false;
        check_form(setup_, site, "Matmul::Iterate");
        if (cursor_ >= iter_count(setup_)) {
            cursor_ = 0;
            return false;
        }
        if (client_mode(site)) {
            Wire w = wire(OP_ITERATE, site);
            w.tile = cursor_;
            w.partial = enPartialSum;
            wait_for(post(w, site), site);
        } else {
            hold_point(site, 0);
            compute_iter(setup_, cursor_, held_[0], enPartialSum, site);
            hold_point(site, 1);
            library_barrier(P_ALL, site);
        }
        ++cursor_;
        return true;
    }

    // Iterate into a CO1 tensor of the kernel's own (NZ, 16 x 16 fractals, ceil(tm / 16) * 16 rows
    // per 16-column block): the kernel moves it out with Fixpipe.
    template <bool sync = true, typename T>
    bool Iterate(bool enPartialSum, const AscendC::LocalTensor<T>& localCmatrix, MPNPU_SITE) {
        at(site);
        static_assert(std::is_same_v<T, L0cT>, "Iterate into CO1: the tensor's type is float (int32_t for int8 inputs)");
        static_assert(!kCfg.isPartialOutput, "mpnpu's Iterate into CO1 does not take MatmulConfig isPartialOutput");
        if (!sync) unsupported(site, "Matmul::Iterate<false> (asynchronous Iterate)");
        if (served_) return false;
        if (client_mode(site)) unsupported(site, "Matmul::Iterate into a CO1 tensor on a vector core");
        if (localCmatrix.mpnpu_mem() != MPNPU_MEM_L0C) api_error(site, "Matmul::Iterate: the C tensor must be in CO1 (L0C)");
        check_form(setup_, site, "Matmul::Iterate");
        if (cursor_ >= tile_count(setup_)) {
            cursor_ = 0;
            return false;
        }
        const Tile tile = tile_of(setup_, cursor_);
        const int64_t m1 = cdiv(tile.tm, 16), n1 = cdiv(tile.tn, 16);
        T* l0c = localCmatrix.mpnpu_addr();
        auto at_nz = [&](int64_t i, int64_t j) { return ((j / 16 * m1 + i / 16) * 16 + i % 16) * 16 + j % 16; };
        std::vector<L0cT>& acc = held_[0];
        acc.assign(size_t(tile.tm) * size_t(tile.tn), L0cT(0));
        if (enPartialSum) {
            localCmatrix.mpnpu_touch('R', P_M, 0, uint64_t(n1 * m1 * 256), site, "Matmul::Iterate");
            for (int64_t i = 0; i < tile.tm; ++i)
                for (int64_t j = 0; j < tile.tn; ++j) acc[size_t(i * tile.tn + j)] = l0c[at_nz(i, j)];
        }
        hold_point(site, 0);
        compute(setup_, cursor_, acc, enPartialSum, site, "Iterate");
        hold_point(site, 1);
        localCmatrix.mpnpu_touch('W', P_M, 0, uint64_t(n1 * m1 * 256), site, "Matmul::Iterate");
        for (int64_t i = 0; i < tile.tm; ++i)
            for (int64_t j = 0; j < tile.tn; ++j) l0c[at_nz(i, j)] = acc[size_t(i * tile.tn + j)];
        ++cursor_;
        return true;
    }

    template <bool sync = true>
    void GetTensorC(const AscendC::GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    MPNPU_SITE) {
        at(site);
        if (!sync) {
            if (!async_tile(site)) return;
            GetTensorC<true>(gm, enAtomic, enSequentialWrite, site);
            async_done();
            return;
        }
        if (served_) return;
        if (cursor_ <= 0) api_error(site, "Matmul::GetTensorC: no Iterate has computed a tile to get");
        if (client_mode(site)) {
            Wire w = wire(OP_GETC, site);
            w.tile = cursor_ - 1;
            w.enAtomic = enAtomic;
            w.sequential = enSequentialWrite;
            w.c_base = encode(gm.mpnpu_base(), site, "Matmul::GetTensorC");
            w.c = encode(gm.mpnpu_addr(), site, "Matmul::GetTensorC");
            wait_for(post(w, site), site);
        } else {
            hold_point(site, 0);
            store_gm_tile(tile_index(setup_, cursor_ - 1), held_[0], reinterpret_cast<const uint8_t*>(gm.mpnpu_base()), gm.mpnpu_addr(),
                          enAtomic, enSequentialWrite, false, site, "GetTensorC");
            hold_point(site, 1);
            library_barrier(P_ALL, site);
        }
    }

    template <bool sync = true, bool doPad = false>
    void GetTensorC(const AscendC::LocalTensor<DstT>& c, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    uint32_t height = 0, uint32_t width = 0, uint32_t srcGap = 0, uint32_t dstGap = 0, MPNPU_SITE) {
        at(site);
        (void)height;
        (void)width;
        (void)srcGap;
        (void)dstGap;
        if (doPad) unsupported(site, "Matmul::GetTensorC<sync, doPad = true>");
        if (!sync) {  // (one tile of the workspace at a time, packed: the dev kit's asynchronous sample takes
                      // each into a baseM x baseN buffer)
            if (!async_tile(site)) return;
            GetTensorC<true, false>(c, enAtomic, true, height, width, srcGap, dstGap, site);
            async_done();
            return;
        }
        if (served_) return;
        if (enAtomic) unsupported(site, "Matmul::GetTensorC to a LocalTensor with enAtomic");
        if (cursor_ <= 0) api_error(site, "Matmul::GetTensorC: no Iterate has computed a tile to get");
        if (!client_mode(site))
            api_error(site, "Matmul::GetTensorC to a LocalTensor: a cube core has no UB (get C to GM, or Iterate into CO1)");
        to_ub(OP_GETC, c, cursor_ - 1, enSequentialWrite, site, "Matmul::GetTensorC");
    }

    template <bool sync = true>
    void GetTensorC(const AscendC::GlobalTensor<DstT>& gm, const AscendC::LocalTensor<DstT>& co2Local,
                    uint8_t enAtomic = 0, bool enSequentialWrite = false, MPNPU_SITE) {
        if (!sync && !async_tile(site)) return;
        GetTensorC<true>(gm, enAtomic, enSequentialWrite, site);
        GetTensorC<true>(co2Local, 0, enSequentialWrite, 0, 0, 0, 0, site);
        if (!sync) async_done();
    }

    template <bool sync = true>
    AscendC::GlobalTensor<DstT> GetTensorC(uint8_t enAtomic = 0, bool enSequentialWrite = false, MPNPU_SITE) {
        (void)enAtomic;
        (void)enSequentialWrite;
        unsupported(site, "Matmul::GetTensorC() returning the workspace's C (asynchronous Iterate)");
    }

    template <bool sync = true>
    void IterateAll(const AscendC::GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    bool waitIterateAll = false, bool fakeMsg = false, MPNPU_SITE) {
        at(site);
        (void)waitIterateAll;
        if (served_) return;
        if constexpr (kCfg.isPartialOutput) unsupported(site, "Matmul::IterateAll with MatmulConfig isPartialOutput");
        if (client_mode(site)) {
            Wire w = wire(fakeMsg ? OP_NULL : OP_ITERATE_ALL, site);
            if (!fakeMsg) check_form(setup_, site, "Matmul::IterateAll");
            w.enAtomic = enAtomic;
            w.sequential = enSequentialWrite;
            w.c_base = encode(gm.mpnpu_base(), site, "Matmul::IterateAll");
            w.c = encode(gm.mpnpu_addr(), site, "Matmul::IterateAll");
            uint64_t seq = post(w, site);
            if (sync) wait_for(seq, site);
            else pending_ = int64_t(seq);
        } else {
            if (fakeMsg) return;
            check_form(setup_, site, "Matmul::IterateAll");
            hold_point(site, 0);
            iterate_all_gm(setup_, reinterpret_cast<const uint8_t*>(gm.mpnpu_base()), gm.mpnpu_addr(), enAtomic,
                           enSequentialWrite, held_[0], site);
            hold_point(site, 1);
            library_barrier(P_ALL, site);
        }
        cursor_ = 0;
    }

    template <bool sync = true>
    void IterateAll(const AscendC::LocalTensor<DstT>& ubCmatrix, uint8_t enAtomic = 0, MPNPU_SITE) {
        at(site);
        if constexpr (kCfg.isPartialOutput) unsupported(site, "Matmul::IterateAll with MatmulConfig isPartialOutput");
        if (!sync) unsupported(site, "Matmul::IterateAll<false> to a LocalTensor");
        if (served_) return;
        if (enAtomic) unsupported(site, "Matmul::IterateAll to a LocalTensor with enAtomic");
        if (!client_mode(site)) api_error(site, "Matmul::IterateAll to a LocalTensor: a cube core has no UB");
        check_form(setup_, site, "Matmul::IterateAll");
        to_ub(OP_ITERATE_ALL, ubCmatrix, -1, false, site, "Matmul::IterateAll");
        cursor_ = 0;
    }

    void WaitIterateAll(MPNPU_SITE) {
        at(site);
        if (pending_ >= 0) {
            wait_for(uint64_t(pending_), site);
            pending_ = -1;
        }
    }

    void End(MPNPU_SITE) {
        at(site);
        if (served_) return;
        cursor_ = 0;
        if (!client_mode(site)) return;
        Wire w = wire(OP_END, site);
        wait_for(post(w, site), site);
        pending_ = -1;
    }

    // -- mpnpu --------------------------------------------------------------------------------------------

    void mpnpu_register(uint32_t index, const TCubeTiling* tiling, const Site& site) override {
        index_ = index;
        served_ = false;
        pending_ = -1;
        if (tiling) Init(tiling, nullptr, site);
        else if constexpr (kStatic) mpnpu_init_static(site);
    }
    // (MatmulConfig enableMixDualMaster: the cube core runs the kernel's code itself, no server)
    bool mpnpu_is_client_capable() const override { return kClients && !kCfg.enableMixDualMaster; }
    void mpnpu_served() override { served_ = true; }
    void mpnpu_client_registered() override {
        client_reg_ = true;
        ++client().alive;
    }

    // A request from vector core ``s`` (on the cube core).
    void mpnpu_serve(const Wire& w, int s, uint8_t* chunk, const Site& site) override {
        Setup st = w.setup;
        st.a_base = decode(w.a_base, site);
        st.a = decode(w.a, site);
        st.b_base = decode(w.b_base, site);
        st.b = decode(w.b, site);
        st.bias_base = decode(w.bias_base, site);
        st.bias = decode(w.bias, site);
        st.quant_base = decode(w.quant_base, site);
        st.quant = decode(w.quant, site);
        st.idx_base = decode(w.idx_base, site);
        st.idx = decode(w.idx, site);
        const uint8_t* c_base = w.to_ub ? chunk : decode(w.c_base, site);
        DstT* c = w.to_ub ? reinterpret_cast<DstT*>(stage(chunk, w.obj, s))
                          : reinterpret_cast<DstT*>(const_cast<uint8_t*>(decode(w.c, site)));
        std::vector<L0cT>& held = held_[s];
        hold_point(site, 0);
        switch (w.op) {
            case OP_ITERATE:
                check_form(st, site, "Matmul::Iterate");
                compute_iter(st, w.tile, held, w.partial != 0, site);
                held_tile_[s] = w.tile;
                break;
            case OP_GETC: {
                if (held_tile_[s] != w.tile) api_error(site, "Matmul::GetTensorC: the tile was not computed");
                setup_ = st;
                store_gm_tile(tile_index(st, w.tile), held, c_base, c, w.enAtomic, w.sequential != 0, w.to_ub != 0, site,
                              "GetTensorC");
                break;
            }
            case OP_ITERATE_ALL:
                check_form(st, site, "Matmul::IterateAll");
                if (w.to_ub) {
                    setup_ = st;
                    for (int32_t t = 0; t < tile_count(st); ++t) {
                        if (skipped(st, tile_of(st, t))) continue;
                        compute(st, t, held, false, site, "IterateAll");
                        store_gm_tile(t, held, c_base, c, 0, false, true, site, "IterateAll");
                    }
                } else {
                    iterate_all_gm(st, c_base, c, w.enAtomic, w.sequential != 0, held, site);
                }
                break;
            case OP_ITERATE_BATCH:
                check_form(st, site, "Matmul::IterateBatch");
                if constexpr (!kNzA && !kNzB && !kNzC) {
                    run_batch(st, c_base, c, w.batch_a, w.batch_b, w.batch_loops, w.stride_a, w.stride_b, w.enAtomic,
                              held, site);
                }
                break;
            case OP_END:
                held_tile_[s] = -1;
                break;
            default:
                break;
        }
        hold_point(site, 1);
    }

protected:
    // The fields of setup_ that say where A (or B) is.
    struct Side {
        const uint8_t*& base;
        const uint8_t*& p;
        int32_t& trans;
        int32_t& l1;
        uint64_t& lo;
        uint64_t& hi;
        int64_t& file;
        int32_t& line;
    };
    Side side_a() {
        return {setup_.a_base, setup_.a, setup_.transA, setup_.a_l1, setup_.a_lo, setup_.a_hi, setup_.a_file, setup_.a_line};
    }
    Side side_b() {
        return {setup_.b_base, setup_.b, setup_.transB, setup_.b_l1, setup_.b_lo, setup_.b_hi, setup_.b_file, setup_.b_line};
    }

    // SetTensorA / SetTensorB: a GM matrix (its buffer ``base``, the matrix at ``p``), or (``local``)
    // a TSCM tensor: in L1, on the cube core that computes (a vector core has no L1 to give).
    // (A and B have one element type)
    template <class X>
    void set_matrix(Side side, char which, const SrcAT* base, const SrcAT* p, bool trans,
                    const AscendC::LocalTensor<SrcAT>* local, const Site& site) {
        at(site);
        const char* call = which == 'A' ? "Matmul::SetTensorA" : "Matmul::SetTensorB";
        if (trans && !X::isTrans)
            api_error(site, "%s: isTranspose%c needs %c's MatmulType with ISTRANS = true", call, which, which);
        if (local) {
            if (X::pos != AscendC::TPosition::TSCM)
                unsupported(site, "%s with a LocalTensor of %c's MatmulType position other than TSCM", call, which);
            if (local->mpnpu_mem() != MPNPU_MEM_L1)
                api_error(site, "%s: a TSCM matrix is a LocalTensor in L1 (TSCM / A1 / B1)", call);
            if (client_mode(site)) unsupported(site, "%s with a TSCM tensor on a vector core (mpnpu: on the cube core)", call);
        }
        side.base = reinterpret_cast<const uint8_t*>(base);
        side.p = reinterpret_cast<const uint8_t*>(p);
        side.trans = trans;
        side.l1 = local ? 1 : 0;
        side.lo = local ? local->mpnpu_buf_lo() : 0;
        side.hi = local ? local->mpnpu_buf_hi() : 0;
        side.file = rel(site.file);
        side.line = site.line;
        cursor_ = 0;
    }

    void check_quant(const Site& site, const char* call) const {
        at(site);
        constexpr bool int8_in = std::is_same_v<SrcAT, int8_t> || std::is_same_v<SrcAT, ::int4b_t>;
        // (bfloat16_t C from int8_t: not on the pages, which list half and int8_t; public kernels dequantise
        // to it, so it is taken, as acc x scale rounded to bfloat16_t)
        constexpr bool ok = int8_in ? std::is_same_v<DstT, half> || std::is_same_v<DstT, int8_t> ||
                                          std::is_same_v<DstT, bfloat16_t>
                                    : (std::is_same_v<SrcAT, half> || std::is_same_v<SrcAT, bfloat16_t>) &&
                                          std::is_same_v<DstT, int8_t>;
        if (!ok)
            api_error(site, "%s: quantisation takes int8_t A and B with a half, bfloat16_t or int8_t C, or half / "
                            "bfloat16_t A and B with an int8_t C (here %s A and B, %s C)", call, vec::type_name<SrcAT>(),
                      vec::type_name<DstT>());
    }

    bool client_mode(const Site& site) const {
        // MatmulConfig enableMixDualMaster: the cube and vector cores run their code apart; mpnpu has the
        // cube core's side (a cube-only kernel, or the cube core of a mix one, computing itself)
        if constexpr (kClients && kCfg.enableMixDualMaster) {
            if (is_mix_launch() && !is_aic())
                unsupported(site, "Matmul with MatmulConfig enableMixDualMaster on a vector core (mpnpu: the cube "
                                  "core computes its own calls)");
        }
        if (!kClients || !is_mix_launch()) {
            if (!is_aic()) {
                if (kClients)
                    api_error(site, "Matmul on a vector core needs a mix kernel (KERNEL_TYPE_MIX_AIC_1_2 or 1_1), "
                                    "whose cube core serves it");
                api_error(site, "MatmulImpl computes on the cube core that calls it; on a vector core use Matmul "
                                "with REGIST_MATMUL_OBJ");
            }
            return false;
        }
        if (is_aic()) return false;  // a cube core of a mix kernel that computes itself
        return true;
    }

    Wire wire(uint32_t op, const Site& site) {
        if constexpr (!MM_CB::mpnpu_none)
            unsupported(site, "Matmul with MatmulCallBackFunc on a vector core of a mix kernel (mpnpu calls the copy "
                              "routines on the core that computes: a cube-only kernel, MatmulImpl, or a cube core "
                              "computing itself)");
        Wire w{};
        w.op = op;
        w.obj = index_;
        w.setup = setup_;
        w.setup.a_base = w.setup.a = w.setup.b_base = w.setup.b = w.setup.bias_base = w.setup.bias = nullptr;
        w.setup.quant_base = w.setup.quant = w.setup.idx_base = w.setup.idx = nullptr;
        w.a_base = encode(setup_.a_base, site, "Matmul::SetTensorA");
        w.a = encode(setup_.a, site, "Matmul::SetTensorA");
        w.b_base = encode(setup_.b_base, site, "Matmul::SetTensorB");
        w.b = encode(setup_.b, site, "Matmul::SetTensorB");
        w.bias_base = encode(setup_.hasBias ? setup_.bias_base : nullptr, site, "Matmul::SetBias");
        w.bias = encode(setup_.hasBias ? setup_.bias : nullptr, site, "Matmul::SetBias");
        w.quant_base = encode(setup_.quant_base, site, "Matmul::SetQuantVector");
        w.quant = encode(setup_.quant, site, "Matmul::SetQuantVector");
        w.idx_base = encode(setup_.idx_base, site, "Matmul::SetSparseIndex");
        w.idx = encode(setup_.idx, site, "Matmul::SetSparseIndex");
        w.c_base.arg = w.c.arg = -1;
        return w;
    }

    // The setup's checks (mpnpu/cube/matmul_engine.h), and an A of CubeFormat::VECTOR (GEMV: A is one
    // row of K elements in GM, read as ND) being one row.
    static void check_form(const Setup& st, const Site& site, const char* what) {
        check_setup(st, site, what);
        if constexpr (A_TYPE::format == CubeFormat::VECTOR) {
            if (st.singleM != 1)
                api_error(site, "%s: A of CubeFormat::VECTOR is one row (singleCoreM 1, here %d)", what, st.singleM);
        }
    }

    // Iterate's steps: the tiles, or with MatmulConfig isPartialOutput each tile's K in baseK parts (tile
    // after tile, each tile's parts in K order), each part's product alone (not accumulated over K;
    // the bias, when set, added to a tile's first part only: mpnpu's choice).
    static int32_t k_parts(const Setup& st) { return kCfg.isPartialOutput ? cdiv(st.singleK, st.tiling.baseK) : 1; }
    static int32_t iter_count(const Setup& st) { return tile_count(st) * k_parts(st); }
    static int32_t tile_index(const Setup& st, int32_t u) { return u / k_parts(st); }
    void compute_iter(const Setup& st, int32_t u, std::vector<L0cT>& acc, bool partial, const Site& site) {
        if constexpr (kCfg.isPartialOutput && !kNzA && !kNzB) {
            const int32_t parts = k_parts(st), kc = u % parts;
            Setup p = st;
            const int64_t k0 = int64_t(kc) * st.tiling.baseK;
            p.singleK = int32_t(std::min<int64_t>(st.tiling.baseK, st.singleK - k0));
            p.a += (st.transA ? k0 * st.orgM : k0) * int64_t(sizeof(SrcAT));
            p.b += (st.transB ? k0 : k0 * st.orgN) * int64_t(sizeof(SrcBT));
            if (kc > 0) p.hasBias = 0;
            compute(p, u / parts, acc, partial, site, "Iterate");
        } else {
            compute(st, u, acc, partial, site, "Iterate");
        }
    }

    // Stores tile t (computed into ``acc``) to C at ``c``: in GM (rows orgN apart, or packed), or
    // into a UB staging area (rows singleN apart, or packed).
    void store_gm_tile(int32_t t, const std::vector<L0cT>& acc, const uint8_t* base, DstT* c, int enAtomic,
                       bool sequential, bool ub, const Site& site, const char* call) {
        const Tile tile = tile_of(setup_, t);
        const CDest<DstT> dst = c_dest(setup_, tile, t, sequential, false, ub, c);
        if (ub) {
            const uint64_t end = uint64_t(dst.p - c + int64_t(tile.tm - 1) * dst.ld + tile.tn) * sizeof(DstT);
            if (end > STAGE_BYTES)
                api_error(site, "Matmul::%s to a LocalTensor: %llu bytes of C exceed mpnpu's %llu-byte staging area", call,
                          (unsigned long long)end, (unsigned long long)STAGE_BYTES);
        }
        store(tile, acc, base, dst, enAtomic, setup_, site, call);
    }

    // -- MatmulCallBackFunc ---------------------------------------------------------------------------------
    //
    // The user's copy routines in place of the Matmul's own. mpnpu computes C a tile (baseM x baseN) at a
    // time over the whole singleK; with a CopyA1 / CopyB1 the tile's A rows / B columns come from L1
    // blocks the routine fills, one call per block:
    //   A: blocks of stepM * baseM rows x stepKa * baseK columns of the core's singleM x singleK part
    //      (stepM / stepKa 0 count as 1; with steps of 1 a block is baseM x baseK), CopyA1(l1, gm, row,
    //      col, useM, useK, tilingPtr, dataPtr): row / col the block's index along M / K from 0, useM /
    //      useK its size in elements (smaller at the part's last row / column of blocks), gm the address
    //      SetTensorA gave;
    //   B: blocks of stepKb * baseK rows x stepN * baseN columns, CopyB1(l1, gm, row, col, useK, useN,
    //      ...): row along K, col along N, gm SetTensorB's address.
    // For each tile the blocks holding its rows (columns) are copied in K order, each after the last was
    // read. The routine writes the block into ``l1`` (an A1 / B1 LocalTensor<int8_t>) in the layout the
    // cube loads from L1, NZ: 16-row fractals of 32 bytes' worth of columns, the rows rounded up to 16
    // (a block's column blocks align16(rows) rows apart), as DataCopy's ND -> NZ copy with
    // dstNzC0Stride align16(rows) writes it. mpnpu waits for every pipe after the call (the routine's
    // copies done) and reads the tile's part on PIPE_MTE1.
    // With a DataCopyOut, each computed tile is put in L0C (a CO1 LocalTensor<int8_t> of L0cT in NZ:
    // 16 x 16 fractals, 16-column blocks align16(tm) rows apart) and DataCopyOut(gm, co1, &params,
    // tilingPtr, dataPtr) is called, gm the address of the tile's first element in C (where the
    // Matmul's own copy would put it: the tile's place in C, or enSequentialWrite's), params a
    // DataCopyOutParams (matmul_config.h). The routine converts and writes C itself (enableRelu and
    // the quantisation setters do not apply; enAtomic is the core's atomic mode during the call).
    // mpnpu places the L1 block and the L0C tile past the bytes the core's TPipe has given out.
    // Callbacks run on the core that computes (never through a cube core's server: a vector core's
    // tilingPtr / dataPtr mean nothing in the cube core's process).
    static uint64_t cb_scratch(int mem) {
        const AscendC::TPipe* p = GetTPipePtr();
        return block_round_up(p ? p->mpnpu_state()->used[mem] : 0);
    }
    static void cb_fits(int mem, uint64_t at, uint64_t bytes, const Site& site, const char* what) {
        if (at + bytes > memory_size(mem))
            api_error(site, "%s: the %llu bytes of the MatmulCallBackFunc block do not fit %s past the TPipe's %llu "
                            "bytes (%zu in all)", what, (unsigned long long)bytes, mem_name(mem),
                      (unsigned long long)at, memory_size(mem));
    }

    // The tile's A (kA, tm x singleK) or B (singleK x tn) copied by the user's routine, row-major in ``buf``.
    template <bool kA>
    Operand<SrcAT> cb_operand(const Setup& st, const Tile& tile, std::vector<SrcAT>& buf, const Site& site,
                              const char* call) {
        const TCubeTiling& t = st.tiling;
        const int64_t K = st.singleK;
        const int64_t bd = int64_t(std::max(1, kA ? t.stepM : t.stepN)) * (kA ? t.baseM : t.baseN);
        const int64_t bk = int64_t(std::max(1, kA ? t.stepKa : t.stepKb)) * t.baseK;
        const int64_t single = kA ? st.singleM : st.singleN;
        const int64_t d0 = kA ? tile.m0 : tile.n0, nd = kA ? tile.tm : tile.tn;
        const int32_t di = int32_t(d0 / bd);
        const int64_t useD = std::min<int64_t>(bd, single - di * bd), din = d0 - di * bd;
        constexpr int64_t c0 = nz_c0_ab<SrcAT>();
        const char* what = what_of(call, kA ? "MatmulCallBackFunc's CopyA1" : "MatmulCallBackFunc's CopyB1");
        const int mem = MPNPU_MEM_L1;
        const uint64_t at = cb_scratch(mem);
        buf.resize(size_t(nd * K));
        thread_local std::vector<SrcAT> part;
        for (int32_t ki = 0; int64_t(ki) * bk < K; ++ki) {
            const int64_t k0 = int64_t(ki) * bk, useK = std::min<int64_t>(bk, K - k0);
            const int64_t rows = kA ? useD : useK, cols = kA ? useK : useD;
            const int64_t rows_pad = align16(rows);
            const uint64_t bytes = uint64_t(rows_pad * ((cols + c0 - 1) / c0 * c0)) * sizeof(SrcAT);
            cb_fits(mem, at, bytes, site, what);
            library_barrier(P_ALL, site);  // (the last block read before the routine writes L1 again)
            const AscendC::LocalTensor<int8_t> l1(kA ? AscendC::TPosition::A1 : AscendC::TPosition::B1, uint32_t(at),
                                                  uint32_t(bytes), site);
            if constexpr (kA)
                MM_CB::mpnpu_copy_a1(l1, st.a, di, ki, int(useD), int(useK), user_def_info_, self_define_data_);
            else
                MM_CB::mpnpu_copy_b1(l1, st.b, ki, di, int(useK), int(useD), user_def_info_, self_define_data_);
            library_barrier(P_ALL, site);  // (the routine's copies done)
            // the tile's part of the block: A rows [din, din + nd) x all useK; B all useK x columns [din, din + nd)
            const int64_t r0 = kA ? din : 0, nr = kA ? nd : useK, cs = kA ? 0 : din, nc = kA ? useK : nd;
            for (int64_t b = cs / c0; b <= (cs + nc - 1) / c0; ++b) {
                const uint64_t first = at + uint64_t((b * rows_pad + r0) * c0) * sizeof(SrcAT);
                local_access('R', P_MTE1, mem, first, first + uint64_t(nr * c0) * sizeof(SrcAT), at, at + bytes, site,
                             what);
            }
            part.resize(size_t(nr * nc));
            nz_gather(reinterpret_cast<const SrcAT*>(memory_base(mem) + at), rows_pad, r0, nr, cs, nc, part.data());
            for (int64_t r = 0; r < nr; ++r)
                for (int64_t c = 0; c < nc; ++c) {
                    const int64_t dst = kA ? r * K + k0 + c : (k0 + r) * nd + c;
                    buf[size_t(dst)] = part[size_t(r * nc + c)];
                }
        }
        return {buf.data(), kA ? K : nd, false, nullptr};
    }

    // Computes tile ``t`` into ``acc``: the Matmul's own copies, or the user's (cb_operand).
    void compute(const Setup& st, int32_t t, std::vector<L0cT>& acc, bool partial, const Site& site, const char* call) {
        if constexpr (MM_CB::mpnpu_has_a1 || MM_CB::mpnpu_has_b1) {
            const Tile tile = tile_of(st, t);
            [[maybe_unused]] const int64_t K = st.singleK;
            thread_local std::vector<SrcAT> a_buf, b_buf;
            [[maybe_unused]] const Source sa{st.a_base, st.a, st.a_l1 != 0, st.a_lo, st.a_hi};
            [[maybe_unused]] const Source sb{st.b_base, st.b, st.b_l1 != 0, st.b_lo, st.b_hi};
            Operand<SrcAT> oa{}, ob{};
            if constexpr (MM_CB::mpnpu_has_a1) {
                oa = cb_operand<true>(st, tile, a_buf, site, call);
            } else {
                const char* what_a = what_set(call, "A", "SetTensorA", st.a_file, st.a_line);
                oa = st.transA ? operand<SrcAT, kNzA>(sa, true, st.orgKa, st.orgM, 0, K, tile.m0, tile.tm, a_buf, site,
                                                      what_a)
                               : operand<SrcAT, kNzA>(sa, false, st.orgM, st.orgKa, tile.m0, tile.tm, 0, K, a_buf, site,
                                                      what_a);
            }
            if constexpr (MM_CB::mpnpu_has_b1) {
                ob = cb_operand<false>(st, tile, b_buf, site, call);
            } else {
                const char* what_b = what_set(call, "B", "SetTensorB", st.b_file, st.b_line);
                ob = st.transB ? operand<SrcBT, kNzB>(sb, true, st.orgN, st.orgKb, tile.n0, tile.tn, 0, K, b_buf, site,
                                                      what_b)
                               : operand<SrcBT, kNzB>(sb, false, st.orgKb, st.orgN, 0, K, tile.n0, tile.tn, b_buf, site,
                                                      what_b);
            }
            compute_operands<SrcAT, SrcBT, BiasT>(st, tile, oa, ob, acc, partial, site, call);
        } else if constexpr (kSparseB) {
            compute_tile_sparse<BiasT, kNzA, kNzB>(st, t, acc, partial, site, call);
        } else {
            compute_tile<SrcAT, SrcBT, BiasT, kNzA, kNzB>(st, t, acc, partial, site, call);
        }
    }

    // Stores a computed tile at ``dst``: the Matmul's own copy, or the user's DataCopyOut from L0C.
    void store(const Tile& tile, const std::vector<L0cT>& acc, const uint8_t* base, const CDest<DstT>& dst,
               int enAtomic, const Setup& st, const Site& site, const char* call) {
        if constexpr (MM_CB::mpnpu_has_out) {
            (void)base;
            const char* what = what_of(call, "MatmulCallBackFunc's DataCopyOut");
            const int mem = MPNPU_MEM_L0C;
            const int64_t rows_pad = align16(tile.tm), cols_pad = align16(tile.tn);
            const uint64_t bytes = uint64_t(rows_pad * cols_pad) * sizeof(L0cT);
            const uint64_t at = cb_scratch(mem);
            cb_fits(mem, at, bytes, site, what);
            if (enAtomic < 0 || enAtomic > 3)
                api_error(site, "Matmul::%s: enAtomic must be 0, 1, 2 or 3 (got %d)", call, enAtomic);
            library_barrier(P_ALL, site);  // (the last tile's copy-out done with L0C)
            local_access('W', P_M, mem, at, at + bytes, at, at + bytes, site, what_of(call, "C into L0C"));
            L0cT* l0c = reinterpret_cast<L0cT*>(memory_base(mem) + at);
            std::fill(l0c, l0c + rows_pad * cols_pad, L0cT(0));
            for (int64_t i = 0; i < tile.tm; ++i)
                for (int64_t j = 0; j < tile.tn; ++j)
                    l0c[((j / 16) * rows_pad + i) * 16 + j % 16] = acc[size_t(i * tile.tn + j)];
            library_barrier(P_ALL, site);  // (C in L0C before the routine reads it)
            AscendC::DataCopyOutParams prm;
            prm.cBurstNum = uint16_t(tile.tm);
            prm.burstLen = uint16_t(tile.tn);
            prm.srcStride = uint16_t(rows_pad);
            prm.dstStride = uint32_t(dst.ld);
            prm.oriNSize = uint16_t(tile.tn);
            prm.enUnitFlag = false;
            prm.quantScalar = st.quant_mode == 1 ? st.quant_scalar : 0;
            prm.cbufWorkspaceAddr = 0;
            const AscendC::LocalTensor<int8_t> co1(AscendC::TPosition::CO1, uint32_t(at), uint32_t(bytes), site);
            CoreState& c = core();
            const int saved = c.atomic_op;
            if (enAtomic) c.atomic_op = enAtomic;
            MM_CB::mpnpu_copy_out(static_cast<const void*>(dst.p), co1, static_cast<const void*>(&prm),
                                  user_def_info_, self_define_data_);
            c.atomic_op = saved;
            library_barrier(P_ALL, site);  // (the routine's copy done)
        } else {
            store_tile<DstT, L0cT>(tile, acc, base, dst, enAtomic, kCfg.enableRelu, st, site, call);
        }
    }

    // A base block the triangle policies leave out (mi > ni below the diagonal, mi < ni above it).
    static bool skipped(const Setup& st, const Tile& tile) {
        if constexpr (kPol == kPolicy::TRIAN_UPPER || kPol == kPolicy::TRIAN_LOWER) {
            const int32_t mi = tile.m0 / st.tiling.baseM, ni = tile.n0 / st.tiling.baseN;
            return kPol == kPolicy::TRIAN_UPPER ? mi > ni : mi < ni;
        } else {
            (void)st, (void)tile;
            return false;
        }
    }

    void iterate_all_gm(const Setup& st, const uint8_t* base, DstT* c, int enAtomic, bool sequential,
                        std::vector<L0cT>& acc, const Site& site, const char* call = "IterateAll") {
        for (int32_t t = 0; t < tile_count(st); ++t) {
            const Tile tile = tile_of(st, t);
            if (skipped(st, tile)) continue;
            compute(st, t, acc, false, site, call);
            store(tile, acc, base, c_dest(st, tile, t, sequential, true, false, c), enAtomic, st, site, call);
        }
    }

    // -- batch matmul (see IterateBatch) ----------------------------------------------------------------------

    // Where C matrix q is from C's start and its row stride (NORMAL / NONE: orgM x orgN matrices).
    static BatchAt c_batch_at(const Setup& st, int64_t q) {
        const TCubeTiling& t = st.tiling;
        if constexpr (C_TYPE::layout == LayoutMode::NONE || C_TYPE::layout == LayoutMode::NORMAL)
            return {q * int64_t(st.orgM) * st.orgN, st.orgN};
        else
            return layout_at(C_TYPE::layout, t.CLayoutInfoB, t.CLayoutInfoS1, t.CLayoutInfoN, t.CLayoutInfoG,
                             t.CLayoutInfoS2, q);
    }

    static void check_batch(const Setup& st, int64_t batchA, int64_t batchB, int64_t loops, const Site& site,
                            const char* what) {
        if (batchA <= 0 || batchB <= 0 || loops <= 0)
            api_error(site, "%s: batchA, batchB (and batchLoop) must be positive (%lld, %lld, %lld)", what,
                      (long long)batchA, (long long)batchB, (long long)loops);
        const int64_t batchC = batchA > batchB ? batchA : batchB;
        if (batchC % batchA || batchC % batchB)
            api_error(site, "%s: batchA (%lld) and batchB (%lld) must divide the larger of them (broadcast)", what,
                      (long long)batchA, (long long)batchB);
        const TCubeTiling& t = st.tiling;
        if constexpr (A_TYPE::layout != LayoutMode::NONE && A_TYPE::layout != LayoutMode::NORMAL) {
            if (t.ALayoutInfoS <= 0 || t.ALayoutInfoD <= 0 || t.BLayoutInfoS <= 0 || t.BLayoutInfoD <= 0 ||
                t.ALayoutInfoN <= 0 || t.ALayoutInfoG <= 0 || t.BLayoutInfoN <= 0 || t.BLayoutInfoG <= 0 ||
                t.ALayoutInfoB <= 0 || t.BLayoutInfoB <= 0)
                api_error(site, "%s: the tiling has no layout of A or B (SetALayout / SetBLayout on the host)", what);
        }
        if constexpr (C_TYPE::layout != LayoutMode::NONE && C_TYPE::layout != LayoutMode::NORMAL) {
            if (t.CLayoutInfoB <= 0 || t.CLayoutInfoS1 <= 0 || t.CLayoutInfoN <= 0 || t.CLayoutInfoG <= 0 ||
                t.CLayoutInfoS2 <= 0)
                api_error(site, "%s: the tiling has no layout of C (SetCLayout on the host)", what);
        }
    }

    void batch_call(const uint8_t* c_base, DstT* c, uint32_t batchA, uint32_t batchB, uint32_t loops, bool sequential,
                    uint32_t strideA, uint32_t strideB, bool partial, uint8_t enAtomic, bool sync, const Site& site,
                    const char* what) {
        static_assert(!kNzA && !kNzB && !kNzC, "batch matmul (IterateBatch / IterateNBatch) in mpnpu takes ND A, B and C");
        static_assert(!kSparseB, "batch matmul (IterateBatch / IterateNBatch) with a SparseMatmulType B: the guide "
                                 "gives the 4:2 sparse matmul LayoutMode::NONE only");
        static_assert(MM_CB::mpnpu_none, "batch matmul (IterateBatch / IterateNBatch) with MatmulCallBackFunc is not "
                                         "supported by mpnpu");
        static_assert(gm_or<A_TYPE>(AscendC::TPosition::GM) && gm_or<B_TYPE>(AscendC::TPosition::GM) &&
                          gm_or<C_TYPE>(AscendC::TPosition::GM),
                      "batch matmul (IterateBatch / IterateNBatch) in mpnpu reads A and B from GM and writes C to GM");
        at(site);
        if (served_) return;
        if (sequential) unsupported(site, "%s with enSequentialWrite", what);
        if constexpr (kCfg.isPartialOutput) unsupported(site, "%s with MatmulConfig isPartialOutput", what);
        if (partial) unsupported(site, "%s with enPartialSum", what);
        check_form(setup_, site, what);
        check_batch(setup_, batchA, batchB, loops, site, what);
        if (client_mode(site)) {
            Wire w = wire(OP_ITERATE_BATCH, site);
            w.batch_a = int32_t(batchA);
            w.batch_b = int32_t(batchB);
            w.batch_loops = int32_t(loops);
            w.stride_a = strideA;
            w.stride_b = strideB;
            w.enAtomic = enAtomic;
            w.c_base = encode(c_base, site, what);
            w.c = encode(c, site, what);
            const uint64_t seq = post(w, site);
            if (sync) wait_for(seq, site);
            else pending_ = int64_t(seq);
        } else {
            hold_point(site, 0);
            run_batch(setup_, c_base, c, batchA, batchB, loops, strideA, strideB, enAtomic, held_[0], site);
            hold_point(site, 1);
            library_barrier(P_ALL, site);
        }
        cursor_ = 0;
    }

    // The batch computation (on the core that computes).
    void run_batch(const Setup& st0, const uint8_t* c_base, DstT* c, int64_t batchA, int64_t batchB, int64_t loops,
                   int64_t strideA, int64_t strideB, int enAtomic, std::vector<L0cT>& acc, const Site& site) {
        const TCubeTiling& t = st0.tiling;
        const int64_t batchC = batchA > batchB ? batchA : batchB;
        constexpr LayoutMode lay = A_TYPE::layout;
        constexpr bool plain = lay == LayoutMode::NONE || lay == LayoutMode::NORMAL;
        const int64_t biasN = C_TYPE::layout == LayoutMode::NONE || C_TYPE::layout == LayoutMode::NORMAL
                                  ? st0.orgN : t.CLayoutInfoS2;
        for (int64_t l = 0; l < loops; ++l) {
            for (int64_t j = 0; j < batchC; ++j) {
                Setup st = st0;
                const int64_t qa = l * batchA + j / (batchC / batchA), qb = l * batchB + j / (batchC / batchB);
                const int64_t qc = l * batchC + j;
                BatchAt a, b;
                if constexpr (plain) {
                    a = {qa * (strideA ? strideA : int64_t(st0.orgM) * st0.orgKa), 0};
                    b = {qb * (strideB ? strideB : int64_t(st0.orgKb) * st0.orgN), 0};
                } else {
                    a = layout_at(lay, t.ALayoutInfoB, t.ALayoutInfoS, t.ALayoutInfoN, t.ALayoutInfoG, t.ALayoutInfoD, qa);
                    b = layout_at(lay, t.BLayoutInfoB, t.BLayoutInfoS, t.BLayoutInfoN, t.BLayoutInfoG, t.BLayoutInfoD, qb);
                    // (the row stride of the stored matrix: A [M, K] or, transposed, [K, M]; B [K, N] or [N, K])
                    if (st.transA) st.orgM = int32_t(a.ld);
                    else st.orgKa = int32_t(a.ld);
                    if (st.transB) st.orgKb = int32_t(b.ld);
                    else st.orgN = int32_t(b.ld);
                }
                st.a += a.off * int64_t(sizeof(SrcAT));
                st.b += b.off * int64_t(sizeof(SrcBT));
                const BatchAt cc = c_batch_at(st0, qc);
                st.orgKc = int32_t(cc.ld);
                if (st.hasBias && st.bias && kCfg.isBiasBatch) st.bias += qc * biasN * int64_t(sizeof(BiasT));
                iterate_all_gm(st, c_base, c + cc.off, enAtomic, false, acc, site, "IterateBatch");
            }
        }
    }


    // Where tile t of C goes in GM (or, ``ub``, in a UB staging area, rows singleN apart). NZ: the
    // C matrix has orgM rows (sequential: each tile is a baseM-row NZ matrix of its own).
    static CDest<DstT> c_dest(const Setup& st, const Tile& tile, int32_t t, bool sequential, bool all, bool ub, DstT* c) {
        if constexpr (kNzC) {
            constexpr int64_t cb = (kCfg.isEnableChannelSplit && sizeof(DstT) == 4) ? 8 : 0;
            if (sequential) return {c + (all ? int64_t(t) * st.tiling.baseM * st.tiling.baseN : 0), 0,
                                    align16(st.tiling.baseM), 0, 0, cb};
            return {c, 0, align16(st.orgM), tile.m0, tile.n0, cb};
        }
        int64_t ld = sequential ? st.tiling.baseN : ub ? st.singleN : (st.orgKc ? st.orgKc : st.orgN);
        // ND_ALIGN: C's rows are N rounded up to 32 bytes apart (the padding columns are not written)
        if (C_TYPE::format == CubeFormat::ND_ALIGN && !sequential && !ub) {
            constexpr int64_t per32 = 32 / int64_t(sizeof(DstT));
            ld = (ld + per32 - 1) / per32 * per32;
        }
        return {c + tile_offset(st, tile, t, sequential, all, ld), ld, 0, 0, 0};
    }

    // A request whose C goes to this vector core's UB: the cube core writes the staging area,
    // this core copies it in (a GM -> UB move on PIPE_MTE2, as the kernel's queues expect).
    void to_ub(uint32_t op, const AscendC::LocalTensor<DstT>& ub, int32_t t, bool sequential, const Site& site,
               const char* what) {
        if (kNzC) unsupported(site, "Matmul: C in CubeFormat::NZ to a LocalTensor (mpnpu writes NZ C to GM only)");
        if (ub.mpnpu_mem() != MPNPU_MEM_UB) api_error(site, "%s: the C tensor must be in UB (VECIN, VECCALC or VECOUT)", what);
        check_ub_aligned(ub.mpnpu_offset(), site, what);
        Wire w = wire(op, site);
        w.tile = t;
        w.sequential = sequential;
        w.to_ub = 1;
        wait_for(post(w, site), site);
        Client& cl = client();
        const uint8_t* st = stage(cl.chunk, index_, cl.sub);
        int64_t first, rows, run, ld;
        if (t < 0) {  // IterateAll: the whole singleM x singleN result
            first = 0;
            rows = setup_.singleM;
            run = setup_.singleN;
            ld = setup_.singleN;
        } else {
            const Tile tile = tile_of(setup_, tile_index(setup_, t));
            ld = sequential ? setup_.tiling.baseN : setup_.singleN;
            first = tile_offset(setup_, tile, tile_index(setup_, t), sequential, false, ld);
            rows = tile.tm;
            run = tile.tn;
        }
        const uint64_t es = sizeof(DstT);
        hold_point(site, 0);
        MpnpuEvent* rec = gm_access('R', P_MTE2, cl.chunk, st + uint64_t(first) * es, uint64_t(run) * es,
                                uint64_t(ld) * es, uint64_t(rows), uint32_t(es), site, what);
        ub.mpnpu_touch('W', P_MTE2, uint64_t(first), uint64_t((rows - 1) * ld + run), site, what);
        uint8_t* dst = reinterpret_cast<uint8_t*>(ub.mpnpu_addr());
        for (int64_t i = 0; i < rows; ++i)
            std::memcpy(dst + uint64_t(first + i * ld) * es, st + uint64_t(first + i * ld) * es, uint64_t(run) * es);
        done(rec);
        hold_point(site, 1);
    }

    // GetTensorC<false> after Iterate<false>: computes the next tile (false: nothing to get, served)
    bool async_tile(const Site& site) {
        if (served_) return false;
        if (async_next_ < 0)
            api_error(site, "Matmul::GetTensorC<false>: no asynchronous Iterate<false> has tiles left to get");
        cursor_ = async_next_;
        Iterate<true>(false, site);
        return true;
    }
    void async_done() {
        if (++async_next_ >= iter_count(setup_)) {
            async_next_ = -1;
            cursor_ = 0;
        }
    }

    Setup setup_;
    int32_t async_next_ = -1;  // the next tile GetTensorC<false> gets after Iterate<false> (-1: none)
    int32_t cursor_ = 0;
    uint32_t index_ = 0;
    bool served_ = false;
    bool client_reg_ = false;
    int64_t pending_ = -1;
    uint8_t sub_block_ = 0;
    uint64_t user_def_info_ = 0, self_define_data_ = 0;
    int32_t batch_a_ = 0, batch_b_ = 0;           // SetBatchNum
    uint8_t *ws_base_ = nullptr, *ws_ = nullptr;  // SetWorkspace (IterateNBatch's C)
    uint32_t nbatch_a_ = 0, nbatch_b_ = 0, nbatch_loops_ = 0;
    int64_t nbatch_next_ = -1;  // the next call of IterateNBatch<false> GetBatchTensorC gets (-1: none)
    std::vector<L0cT> held_[2];
    int32_t held_tile_[2] = {-1, -1};
};

}  // namespace mm
}  // namespace mpnpu

namespace AscendC {

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM,
          class MM_CB = MatmulCallBackFunc<nullptr, nullptr, nullptr>, MATMUL_POLICY_DEFAULT_OF(MatmulPolicy)>
class Matmul
    : public mpnpu::mm::MatmulCore<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE, MM_CFG, MM_CB, MATMUL_POLICY<MM_CFG>, true> {};

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM,
          class MM_CB = MatmulCallBackFunc<nullptr, nullptr, nullptr>, MATMUL_POLICY_DEFAULT_OF(MatmulPolicy)>
class MatmulImpl
    : public mpnpu::mm::MatmulCore<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE, MM_CFG, MM_CB, MATMUL_POLICY<MM_CFG>, false> {};

// CeilDiv(a, b): a / b rounded up (0 when b is 0, as DivCeil); CeilAlign(a, b): a rounded up to a
// multiple of b (a when b is 0). Not on an API page: public kernels that include lib/matmul_intf.h
// call them unqualified without defining them, inside namespace AscendC (ops-nn quant_batch_matmul_v4)
// and after ``using namespace matmul`` (batch_mat_mul_v3, transpose_batch_mat_mul, rotate_quant), so
// the matmul library gives them in both. A trailing empty parameter pack makes them less specialised
// than any two-parameter form, so a kernel's own CeilDiv (a template of one or two types, or a
// plain function) is preferred where both are seen, rather than the call being ambiguous.
template <typename T, typename U, typename... None, typename = std::enable_if_t<sizeof...(None) == 0>>
constexpr auto CeilDiv(T a, U b, None...) -> std::common_type_t<T, U> {
    return DivCeil(a, b);
}
template <typename T, typename U, typename... None, typename = std::enable_if_t<sizeof...(None) == 0>>
constexpr auto CeilAlign(T a, U b, None...) -> std::common_type_t<T, U> {
    return AlignUp(a, b);
}

}  // namespace AscendC

// The older spelling: matmul::Matmul, matmul::MatmulType, ...
namespace matmul {
using AscendC::CeilAlign;
using AscendC::CeilDiv;
// GetBlockIdx: not on an API page; the dev kit's matmul samples compute their part of C from
// AscendC::GetBlockIdx() and then compare matmul::GetBlockIdx() with usedCoreNum: the same index.
using AscendC::GetBlockIdx;
using AscendC::Matmul;
using AscendC::MatmulCallBackFunc;
using AscendC::MatmulConfig;
using AscendC::MatmulImpl;
using AscendC::MatmulType;
using AscendC::SparseMatmulType;
}  // namespace matmul

// REGIST_MATMUL_OBJ(&pipe, workspace, mm[, &tiling][, mm2, &tiling2 ...]): registers the Matmul
// objects (and Inits those given a tiling). On the cube core of a mix kernel it serves the vector
// cores' requests until both have called End, then returns from the calling function.
//
// A program that defines ASCENDC_CUBE_ONLY (before it includes lib/matmul_intf.h, as the pages say: pure
// cube mode) keeps its Matmul objects on the cube core, which computes itself; REGIST_MATMUL_OBJ then
// serves no vector core. Whether it is defined is read where REGIST_MATMUL_OBJ is written (in the
// kernel's file, after its #define), not where this header was first included.
#define MPNPU_STRINGIFY_(x) #x
#define MPNPU_STRINGIFY(x) MPNPU_STRINGIFY_(x)
#define MPNPU_CUBE_ONLY_DEFINED (MPNPU_STRINGIFY(ASCENDC_CUBE_ONLY)[0] != 'A')
#define REGIST_MATMUL_OBJ(tpipe, workspace, ...)                                                         \
    if (::mpnpu::mm::regist(::mpnpu::Site::here(), (tpipe), reinterpret_cast<uint8_t*>(workspace),     \
                            MPNPU_CUBE_ONLY_DEFINED, __VA_ARGS__))                                       \
    return

#endif  // MPNPU_CUBE_MATMUL_H
