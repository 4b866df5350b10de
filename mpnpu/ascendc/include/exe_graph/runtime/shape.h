// Host side: the runtime shape of a tensor (gert::Shape), as unit tests' host tiling helpers build it:
// up to kMaxDimNum dimensions, appended or set one by one; GetDim past the last dimension gives
// kInvalidDimValue; the shape size is the product of the dimensions (1 for a scalar).
#ifndef MPNPU_EXE_GRAPH_RUNTIME_SHAPE_H
#define MPNPU_EXE_GRAPH_RUNTIME_SHAPE_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>

namespace gert {

class Shape {
public:
    static constexpr size_t kMaxDimNum = 25;
    static constexpr int64_t kInvalidDimValue = std::numeric_limits<int64_t>::min();

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) {
        for (int64_t d : dims) AppendDim(d);
    }

    size_t GetDimNum() const { return dim_num_; }
    void SetDimNum(size_t n) { dim_num_ = n > kMaxDimNum ? kMaxDimNum : n; }
    int64_t GetDim(size_t idx) const { return idx < dim_num_ ? dims_[idx] : kInvalidDimValue; }
    void SetDim(size_t idx, int64_t value) {
        if (idx < kMaxDimNum) dims_[idx] = value;
    }
    // Adds a dimension after the last one; a shape already at kMaxDimNum dimensions is left as it is.
    Shape& AppendDim(int64_t value) {
        if (dim_num_ < kMaxDimNum) dims_[dim_num_++] = value;
        return *this;
    }
    bool IsScalar() const { return dim_num_ == 0; }
    void SetScalar() { dim_num_ = 0; }
    int64_t GetShapeSize() const {
        int64_t size = 1;
        for (size_t i = 0; i < dim_num_; ++i) {
            if (dims_[i] < 0) return -1;  // an unknown dimension
            size *= dims_[i];
        }
        return size;
    }
    const int64_t& operator[](size_t idx) const { return dims_[idx]; }
    int64_t& operator[](size_t idx) { return dims_[idx]; }
    bool operator==(const Shape& other) const {
        if (dim_num_ != other.dim_num_) return false;
        for (size_t i = 0; i < dim_num_; ++i)
            if (dims_[i] != other.dims_[i]) return false;
        return true;
    }
    bool operator!=(const Shape& other) const { return !(*this == other); }

private:
    size_t dim_num_ = 0;
    int64_t dims_[kMaxDimNum] = {};
};

}  // namespace gert

#endif
