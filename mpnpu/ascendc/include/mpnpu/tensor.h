// GlobalTensor (a typed view of GM) and LocalTensor (a typed view of one local buffer).
//
// Both remember what memcheck checks against: a GlobalTensor the buffer given to SetGlobalBuffer
// (the GM allocation it lies in is the tensor every access must stay inside), a LocalTensor the
// local buffer it was taken from (TPipe::InitBuffer of a queue or TBuf). Views made with
// operator[] keep that, so an access past the end of a view is caught when it leaves the
// allocation or buffer, as msSanitizer's memcheck does, never silently landing in a neighbour.
#ifndef MPNPU_TENSOR_H
#define MPNPU_TENSOR_H

#include <cstdint>
#include <type_traits>

#include "native/rt.h"
#include "types.h"

namespace AscendC {

// Whether a GlobalTensor's accesses go through the L2 cache (SetL2CacheHint), and the reserved
// read/write mode; CACHE_MODE_LAST closes the list.
enum class CacheMode : uint8_t { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2 };
enum CacheRwMode : uint8_t { READ = 1, WRITE = 2, RW = 3 };

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;

    GlobalTensor() = default;

    // A GM buffer of ``bufferSize`` elements (informational; accesses are checked against the GM
    // tensor the buffer lies in).
    void SetGlobalBuffer(T* buffer, uint64_t bufferSize) {
        base_ = addr_ = buffer;
        size_ = bufferSize;
    }
    void SetGlobalBuffer(T* buffer) {
        base_ = addr_ = buffer;
        size_ = 0;
    }

    // The tensor from element ``offset`` on. Two int4b_t values share a byte (the even one in the low
    // half), so an offset of n of them is n / 2 bytes, as the API counts int4b_t elements; pointer
    // arithmetic on a GM_ADDR cast to int4b_t* still counts bytes, as kernels halve it by hand.
    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor v = *this;
        if constexpr (std::is_same_v<T, ::int4b_t>)
            v.addr_ = reinterpret_cast<T*>(reinterpret_cast<uint8_t*>(addr_) + offset / 2);
        else
            v.addr_ = addr_ + offset;
        v.size_ = size_ > offset ? size_ - offset : 0;
        return v;
    }

    // A reference to one element, as a scalar access (the S pipe); checked, not traced.
    T& operator()(uint64_t offset, MPNPU_SITE) const {
        mpnpu::gm_access('R', mpnpu::P_S, base_, addr_ + offset, sizeof(T), 0, 1, sizeof(T), site, "operator()");
        return addr_[offset];
    }

    T GetValue(uint64_t offset, MPNPU_SITE) const {
        mpnpu::hold_point(site, 0);
        mpnpu::gm_access('R', mpnpu::P_S, base_, addr_ + offset, sizeof(T), 0, 1, sizeof(T), site, "GetValue");
        T v = addr_[offset];
        mpnpu::hold_point(site, 1);
        return v;
    }

    void SetValue(uint64_t offset, T value, MPNPU_SITE) {
        mpnpu::hold_point(site, 0);
        mpnpu::gm_access('W', mpnpu::P_S, base_, addr_ + offset, sizeof(T), 0, 1, sizeof(T), site, "SetValue");
        addr_[offset] = value;
        mpnpu::hold_point(site, 1);
    }

    uint64_t GetSize() const { return size_; }
    T* GetPhyAddr() const { return addr_; }
    T* GetPhyAddr(uint64_t offset) const { return addr_ + offset; }

    template <typename U>
    GlobalTensor<U> ReinterpretCast() const {
        GlobalTensor<U> v;
        v.mpnpu_set(reinterpret_cast<U*>(base_), reinterpret_cast<U*>(addr_), size_ * sizeof(T) / sizeof(U));
        return v;
    }

    // Cache hints change nothing on a CPU (every core sees GM as it is).
    template <CacheRwMode rwMode = CacheRwMode::RW>
    void SetL2CacheHint(CacheMode mode) {
        (void)mode;
    }
    void SetShapeInfo(const ShapeInfo& info) { shape_ = info; }
    ShapeInfo GetShapeInfo() const { return shape_; }

    // -- for mpnpu's API implementations ----------------------------------------------------------
    T* mpnpu_addr() const { return addr_; }
    T* mpnpu_base() const { return base_; }
    void mpnpu_set(T* base, T* addr, uint64_t size) {
        base_ = base;
        addr_ = addr;
        size_ = size;
    }

private:
    T* base_ = nullptr;  // the buffer of SetGlobalBuffer: names the GM tensor memcheck checks against
    T* addr_ = nullptr;  // this view's first element
    uint64_t size_ = 0;
    ShapeInfo shape_{};
};

// One element of GM read or written by a scalar access that bypasses the data cache (the S pipe).
template <typename T>
inline T ReadGmByPassDCache(__gm__ T* addr, MPNPU_SITE) {
    mpnpu::hold_point(site, 0);
    auto* rec =
        mpnpu::gm_access('R', mpnpu::P_S, addr, addr, sizeof(T), 0, 1, sizeof(T), site, "ReadGmByPassDCache");
    T v = *addr;
    mpnpu::done(rec);  // (the read's span ends once it has loaded: racecheck's rule of polled GM reads it)
    mpnpu::hold_point(site, 1);
    return v;
}
template <typename T>
inline void WriteGmByPassDCache(__gm__ T* addr, T value, MPNPU_SITE) {
    mpnpu::hold_point(site, 0);
    auto* rec =
        mpnpu::gm_access('W', mpnpu::P_S, addr, addr, sizeof(T), 0, 1, sizeof(T), site, "WriteGmByPassDCache");
    *addr = value;
    mpnpu::done(rec);  // (the write's span ends once it has stored: a poll that began later saw it)
    mpnpu::hold_point(site, 1);
}

template <typename T>
class LocalTensor {
public:
    using PrimType = T;

    LocalTensor() = default;
    // A tensor of ``tileSize`` elements at byte ``addr`` of the local memory ``pos`` is in, for kernels
    // that place their buffers themselves (defined with the memories, in tpipe.h).
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize, MPNPU_SITE);

    // dst = src0 + src1 and the other whole-tensor operators (mpnpu/vector/binary.h): the expression
    // the operator made is computed into this tensor.
    template <typename E, typename = typename E::mpnpu_whole_tensor>
    LocalTensor& operator=(const E& expr) {
        expr.run(*this, expr.src0, expr.src1, expr.site);
        return *this;
    }

    LocalTensor operator[](uint32_t offset) const {
        LocalTensor v = *this;
        v.off_ = off_ + mpnpu::elem_bytes<T>(offset);
        v.size_ = size_ > offset ? size_ - offset : 0;
        return v;
    }

    // A reference to one element, as a scalar access (the S pipe); checked, not traced.
    T& operator()(uint32_t index, MPNPU_SITE) const {
        uint64_t b = off_ + uint64_t(index) * sizeof(T);
        mpnpu::local_access('R', mpnpu::P_S, mem_, b, b + sizeof(T), lo_, hi_, site, "operator()");
        return *reinterpret_cast<T*>(mpnpu::memory_base(mem_) + b);
    }

    T GetValue(uint32_t index, MPNPU_SITE) const {
        uint64_t b = off_ + uint64_t(index) * sizeof(T);
        mpnpu::local_access('R', mpnpu::P_S, mem_, b, b + sizeof(T), lo_, hi_, site, "GetValue");
        T v;
        std::memcpy(&v, mpnpu::memory_base(mem_) + b, sizeof(T));
        return v;
    }

    template <typename V>
    void SetValue(uint32_t index, V value, MPNPU_SITE) const {
        uint64_t b = off_ + uint64_t(index) * sizeof(T);
        mpnpu::local_access('W', mpnpu::P_S, mem_, b, b + sizeof(T), lo_, hi_, site, "SetValue");
        T v = static_cast<T>(value);
        std::memcpy(mpnpu::memory_base(mem_) + b, &v, sizeof(T));
    }

    uint32_t GetSize() const { return size_; }
    void SetSize(uint32_t size) { size_ = size; }
    uint32_t GetLength() const { return uint32_t(mpnpu::elem_bytes<T>(size_)); }
    void SetBufferLen(uint32_t bytes) { size_ = uint32_t(mpnpu::bytes_elems<T>(bytes)); }
    // The element's address in this process (what a kernel may compute alignment from).
    uint64_t GetPhyAddr() const { return uint64_t(reinterpret_cast<uintptr_t>(mpnpu_addr())); }
    uint64_t GetPhyAddr(uint32_t offset) const { return GetPhyAddr() + mpnpu::elem_bytes<T>(offset); }
    TPosition GetPosition() const { return pos_; }
    void SetUserTag(int32_t tag) { tag_ = tag; }
    int32_t GetUserTag() const { return tag_; }
    void SetShapeInfo(const ShapeInfo& info) { shape_ = info; }
    ShapeInfo GetShapeInfo() const { return shape_; }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const {
        LocalTensor<U> v;
        v.mpnpu_init(mem_, pos_, off_, uint32_t(mpnpu::bytes_elems<U>(mpnpu::elem_bytes<T>(size_))), lo_, hi_);
        v.SetUserTag(tag_);
        return v;
    }

    // This tensor starts ``offset`` elements of S into ``src`` (and keeps src's buffer).
    template <typename S>
    void SetAddrWithOffset(LocalTensor<S>& src, uint32_t offset) {
        mem_ = src.mpnpu_mem();
        pos_ = src.GetPosition();
        off_ = src.mpnpu_offset() + mpnpu::elem_bytes<S>(offset);
        lo_ = src.mpnpu_buf_lo();
        hi_ = src.mpnpu_buf_hi();
        uint64_t left = hi_ > off_ ? hi_ - off_ : 0;
        size_ = uint32_t(mpnpu::bytes_elems<T>(left));
    }

    // -- for mpnpu's API implementations ----------------------------------------------------------
    void mpnpu_init(int mem, TPosition pos, uint64_t offset, uint32_t size, uint64_t buf_lo, uint64_t buf_hi) {
        mem_ = mem;
        pos_ = pos;
        off_ = offset;
        size_ = size;
        lo_ = buf_lo;
        hi_ = buf_hi;
    }
    int mpnpu_mem() const { return mem_; }
    uint64_t mpnpu_offset() const { return off_; }  // bytes from the start of its memory
    uint64_t mpnpu_buf_lo() const { return lo_; }
    uint64_t mpnpu_buf_hi() const { return hi_; }
    T* mpnpu_addr() const { return reinterpret_cast<T*>(mpnpu::memory_base(mem_) + off_); }
    // Check (and trace) an access by ``pipe`` to elements [first, first + n) of this tensor.
    void mpnpu_touch(char kind, uint8_t pipe, uint64_t first, uint64_t n, const mpnpu::Site& site,
                     const char* what) const {
        uint64_t b = off_ + mpnpu::elem_bytes<T>(first);
        mpnpu::local_access(kind, pipe, mem_, b, b + mpnpu::elem_bytes<T>(n), lo_, hi_, site, what);
    }
    // The same for a byte range [lo, hi) relative to this tensor's first element.
    void mpnpu_touch_bytes(char kind, uint8_t pipe, uint64_t lo, uint64_t hi, const mpnpu::Site& site,
                           const char* what) const {
        mpnpu::local_access(kind, pipe, mem_, off_ + lo, off_ + hi, lo_, hi_, site, what);
    }

private:
    int mem_ = MPNPU_MEM_UB;
    TPosition pos_ = TPosition::VECCALC;
    uint64_t off_ = 0;   // first element, bytes from the memory's start
    uint32_t size_ = 0;  // elements from off_ to the end of the view
    uint64_t lo_ = 0;    // the buffer this tensor was taken from: bytes [lo_, hi_) of its memory
    uint64_t hi_ = 0;
    int32_t tag_ = 0;
    ShapeInfo shape_{};
};

}  // namespace AscendC

#endif  // MPNPU_TENSOR_H
