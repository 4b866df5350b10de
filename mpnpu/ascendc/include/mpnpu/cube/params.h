// Parameter structs and enumerations of the cube core's instructions: GM -> L1 ND2NZ copies
// (Nd2NzParams), L1 -> L0A/L0B loads (LoadData2DParams, LoadData2dTransposeParams, LoadData2DParamsV2, the img2col
// LoadData3DParamsV2 / V2Pro and their registers' params), the matrix multiply (MmadParams) and
// L0C -> GM moves (FixpipeParamsV220, DataCopyCO12DstParams, FixpipeConfig, QuantMode_t).
//
// Field names, meanings and positional order follow the documented API (so ``Nd2NzParams{1, m,
// k, 0, k, m, 1, 0}`` means what the documentation says); the structs are mpnpu's own.
#ifndef MPNPU_CUBE_PARAMS_H
#define MPNPU_CUBE_PARAMS_H

#include <cstdint>

// Conversion applied by a move out of L0C (global, as kernels spell it: QuantMode_t::F322F16).
enum QuantMode_t {
    NoQuant,       // no conversion: float or int32_t out as it is
    F322F16,       // float -> half, round to nearest even
    F322BF16,      // float -> bfloat16_t, round to nearest even
    DEQF16,        // int32_t -> half with a scalar scale
    VDEQF16,       // int32_t -> half with a scale per channel
    QF322B8_PRE,   // float -> int8_t / uint8_t with a scalar scale
    VQF322B8_PRE,  // float -> int8_t / uint8_t with a scale per channel
    REQ8,          // int32_t -> int8_t / uint8_t with a scalar scale
    VREQ8,         // int32_t -> int8_t / uint8_t with a scale per channel
};

namespace AscendC {

// ND -> NZ conversion while copying GM (or UB) into local memory: ndNum matrices of nValue rows
// and dValue columns; rows srcDValue elements apart in the source; in the destination the
// 32-byte column blocks of one row are dstNzC0Stride blocks apart and consecutive rows
// dstNzNStride blocks apart; matrices srcNdMatrixStride / dstNzMatrixStride elements apart.
struct Nd2NzParams {
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
    Nd2NzParams() = default;
    Nd2NzParams(uint16_t ndNumIn, uint16_t nValueIn, uint16_t dValueIn, uint16_t srcNdMatrixStrideIn,
                uint16_t srcDValueIn, uint16_t dstNzC0StrideIn, uint16_t dstNzNStrideIn, uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
};

// 512-byte fractals moved from L1 (or GM) into L0A / L0B: repeatTimes fractals, the first at
// fractal startIndex of the source, each next srcStride fractals further; in the destination
// dstGap fractals are left between consecutive ones. ifTranspose transposes each (16-bit) fractal.
struct LoadData2DParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint8_t sid = 0;
    uint16_t dstGap = 0;
    bool ifTranspose = false;
    uint8_t addrMode = 0;
    LoadData2DParams() = default;
    LoadData2DParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint8_t sidIn,
                     uint16_t dstGapIn, bool ifTransposeIn, uint8_t addrModeIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), sid(sidIn), dstGap(dstGapIn),
          ifTranspose(ifTransposeIn), addrMode(addrModeIn) {}
};

// The older pages' spelling (LoadDataWithSparse's parameter), the same fields in the same order.
using LoadData2dParams = LoadData2DParams;

// 2D loads with a transpose (LoadDataWithTranspose): repeatTimes squares, the first at square
// startIndex of the source, each next srcStride squares further (a square: one 16 x 16 fractal of
// 16-bit elements, two side-by-side 16 x 8 fractals of 32-bit ones, 1 KiB); in the destination the
// first fractal of each repeat is dstGap fractals after the end of the previous repeat's first, and
// a 32-bit square's second fractal dstFracGap fractals after the end of its first. addrMode 0
// increases the source address (mpnpu has that mode only).
struct LoadData2dTransposeParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
    LoadData2dTransposeParams() = default;
    LoadData2dTransposeParams(uint16_t startIndexIn, uint8_t repeatTimesIn, uint16_t srcStrideIn, uint16_t dstGapIn,
                              uint16_t dstFracGapIn, uint8_t addrModeIn = 0)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstFracGapIn), addrMode(addrModeIn) {}
};

// 2D loads as the Ascend 950 documents them (LoadData with these params): an mStep x kStep block
// of 512-byte fractals of an M x K matrix held as fractals, starting mStartPosition fractals (of 16
// rows) down and kStartPosition fractals (of 32 bytes) across; in the source consecutive K fractals
// are srcStride fractals apart, in the destination dstStride. ifTranspose transposes each fractal.
struct LoadData2DParamsV2 {
    uint32_t mStartPosition = 0;
    uint32_t kStartPosition = 0;
    uint16_t mStep = 0;
    uint16_t kStep = 0;
    int32_t srcStride = 0;
    uint16_t dstStride = 0;
    bool ifTranspose = false;
    uint8_t sid = 0;
    LoadData2DParamsV2() = default;
    LoadData2DParamsV2(uint32_t mStartPositionIn, uint32_t kStartPositionIn, uint16_t mStepIn, uint16_t kStepIn,
                       int32_t srcStrideIn, uint16_t dstStrideIn, bool ifTransposeIn, uint8_t sidIn = 0)
        : mStartPosition(mStartPositionIn), kStartPosition(kStartPositionIn), mStep(mStepIn), kStep(kStepIn),
          srcStride(srcStrideIn), dstStride(dstStrideIn), ifTranspose(ifTransposeIn), sid(sidIn) {}
};

// -- The img2col load (LoadData with LoadData3DParamsV2 / V2Pro) and its state registers -------------------

constexpr uint32_t PAD_SIZE = 4;     // entries of a padList: left, right, top, bottom
constexpr uint32_t BLOCK_CUBE = 16;  // rows (and 16-bit columns) of a cube fractal

// Which feature-map register SetFmatrix writes and a load reads (this chip class has the left one).
enum class FmatrixMode : uint8_t { FMATRIX_LEFT = 0, FMATRIX_RIGHT = 1 };

// Whether an img2col load sets the feature-map (l1H, l1W, padList) and padding-value registers from
// its params (true) or uses what SetFmatrix / SetLoadDataPaddingValue left there (false).
struct IsResetLoad3dConfig {
    bool isSetFMatrix = true;
    bool isSetPadding = true;
};
constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};

// SetLoadDataRepeat: repeatTime blocks in one img2col load, each repeatStride further down the
// img2col matrix (repeatMode 0: units of 16 rows) or across it (1: units of 32 bytes of columns).
// dstStride is the Ascend 950's (this chip class ignores it).
struct LoadDataRepeatParam {
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1;
    uint8_t repeatMode = 0;
    uint16_t dstStride = 0;
    LoadDataRepeatParam() = default;
    LoadDataRepeatParam(uint16_t repeatStrideIn, uint8_t repeatTimeIn, uint8_t repeatModeIn, uint16_t dstStrideIn = 0)
        : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn), dstStride(dstStrideIn) {}
};

// The img2col load of a feature map held in L1 as NC1HWC0 (c1 blocks of l1H x l1W x C0, C0 = 32
// bytes of channels): the img2col matrix has one row per output position (ho * Wo + wo) and one
// column per (c1, kh, kw, c0); the load takes mExtension rows from mStartPt and kExtension columns
// from kStartPt into L0A (Zz; enTranspose: the transpose, Zz) or L0B (Zn of the same matrix).
template <typename T>
struct LoadData3DParamsV2 {
    uint8_t padList[4] = {0, 0, 0, 0};
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = T(0);
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
    LoadData3DParamsV2() = default;
    LoadData3DParamsV2(const uint8_t padListIn[4], uint16_t l1HIn, uint16_t l1WIn, uint16_t channelSizeIn,
                       uint16_t kExtensionIn, uint16_t mExtensionIn, uint16_t kStartPtIn, uint16_t mStartPtIn,
                       uint8_t strideWIn, uint8_t strideHIn, uint8_t filterWIn, uint8_t filterHIn,
                       uint8_t dilationFilterWIn, uint8_t dilationFilterHIn, bool enTransposeIn, bool enSmallKIn,
                       T padValueIn, bool filterSizeWIn = false, bool filterSizeHIn = false, bool fMatrixCtrlIn = false)
        : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
          kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
          filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
          enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn), filterSizeW(filterSizeWIn),
          filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn) {
        for (int i = 0; i < 4; ++i) padList[i] = padListIn[i];
    }
};

// The packed form: the feature map and padding value come from SetFmatrix / SetLoadDataPaddingValue;
// extConfig = mStartPt << 48 | kStartPt << 32 | mExtension << 16 | kExtension, filterConfig =
// dilationFilterH << 40 | dilationFilterW << 32 | filterH << 24 | filterW << 16 | strideH << 8 | strideW.
struct LoadData3DParamsV2Pro {
    uint16_t channelSize = 0;
    bool enTranspose = false;
    bool enSmallK = false;
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
    uint64_t extConfig = 0;
    uint64_t filterConfig = 0X10101010101ULL;
    LoadData3DParamsV2Pro() = default;
    LoadData3DParamsV2Pro(uint16_t channelSizeIn, bool enTransposeIn, bool enSmallKIn, bool filterSizeWIn,
                          bool filterSizeHIn, bool fMatrixCtrlIn, uint64_t extConfigIn,
                          uint64_t filterConfigIn = 0X10101010101ULL)
        : channelSize(channelSizeIn), enTranspose(enTransposeIn), enSmallK(enSmallKIn), filterSizeW(filterSizeWIn),
          filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn), extConfig(extConfigIn),
          filterConfig(filterConfigIn) {}
};

// One matrix multiply on L0: C[m, n] (=|+=) A[m, k] x B[k, n]. C starts from zero
// (cmatrixInitVal), from the bias table (cmatrixSource, or the bias form of Mmad), or from what
// L0C holds (cmatrixInitVal false; or the older isBias true).
struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
    bool disableGemv = false;
    MmadParams() = default;
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn) : m(mIn), n(nIn), k(kIn) {}
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), cmatrixInitVal(!isBiasIn) {}
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, uint8_t unitFlagIn, bool cmatrixSourceIn, bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn) {}
    MmadParams(uint16_t mIn, uint16_t nIn, uint16_t kIn, bool isBiasIn, int32_t fmOffsetIn, bool enSsparseIn,
               bool enWinogradAIn, bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn), cmatrixInitVal(!isBiasIn) {}
};

// The layout a move out of L0C writes: NZ as it is, or ND rows (NZ2ND).
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };

struct FixpipeConfig {
    CO2Layout format;
    bool isToUB = false;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

// L0C (NZ) -> GM: an mSize x nSize block whose 16-column blocks are srcStride rows (of 16
// elements) apart in L0C; ND out: rows dstStride elements apart; NZ out: 16-column blocks
// dstStride 32-byte blocks apart. ndNum blocks, srcNdStride fractals / dstNdStride elements apart.
struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    bool reluEn = false;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
    FixpipeParamsV220() = default;
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn,
                      QuantMode_t quantPreIn, uint64_t deqScalarIn, uint16_t ndNumIn, uint16_t srcNdStrideIn,
                      uint16_t dstNdStrideIn, uint8_t unitFlagIn, bool isChannelSplitIn = false)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn),
          quantPre(quantPreIn), deqScalar(deqScalarIn), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), unitFlag(unitFlagIn), isChannelSplit(isChannelSplitIn) {}
};
using FixpipeParams = FixpipeParamsV220;

// The unit-flag values of Mmad and the L0C copies by name (the UnitFlag page: 2 keeps the L0C units'
// flags as they are, 3 flips them once the instruction is done; 0 is off).
constexpr uint8_t UFMode2 = 2;
constexpr uint8_t UFMode3 = 3;

// The older L0C -> GM copy (DataCopy with these params); NZ2ND's matrix count and strides come
// from SetFixpipeNz2ndFlag.
struct DataCopyCO12DstParams {
    uint8_t sid = 0;
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint32_t dstStride = 0;
    uint16_t srcStride = 0;
    uint8_t unitFlag = 0;
    uint8_t clipReluPre = 0;
    uint8_t eltWiseOp = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint8_t reluPre = 0;
    bool channelSplit = false;
    bool nz2ndEn = false;
    DataCopyCO12DstParams() = default;
    DataCopyCO12DstParams(uint16_t nSizeIn, uint16_t mSizeIn, uint32_t dstStrideIn, uint16_t srcStrideIn,
                          QuantMode_t quantPreIn, uint8_t reluPreIn, bool channelSplitIn, bool nz2ndEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), dstStride(dstStrideIn), srcStride(srcStrideIn), quantPre(quantPreIn),
          reluPre(reluPreIn), channelSplit(channelSplitIn), nz2ndEn(nz2ndEnIn) {}
};

}  // namespace AscendC

#endif  // MPNPU_CUBE_PARAMS_H
