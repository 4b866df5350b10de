// Host side: a tensor's shape as the high-level APIs' tiling helpers take it (ge::Shape, which the
// API also names AscendC::TensorShape: GetXxxMaxMinTmpSize(const AscendC::TensorShape& srcShape, ...)).
// Built from a list of dimensions (TensorShape({128}), TensorShape shape{{32, 160}}); the shape size is
// the product of the dimensions (1 for a scalar, -1 when one is unknown, that is negative).
#ifndef MPNPU_GRAPH_TENSOR_SHAPE_H
#define MPNPU_GRAPH_TENSOR_SHAPE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ge {

class Shape {
public:
    Shape() = default;
    Shape(const std::vector<int64_t>& dims) : dims_(dims) {}

    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t idx) const { return idx < dims_.size() ? dims_[idx] : 0; }
    std::vector<int64_t> GetDims() const { return dims_; }
    // False (and nothing changed) for an index past the last dimension.
    bool SetDim(size_t idx, int64_t value) {
        if (idx >= dims_.size()) return false;
        dims_[idx] = value;
        return true;
    }
    int64_t GetShapeSize() const {
        int64_t size = 1;
        for (int64_t d : dims_) {
            if (d < 0) return -1;
            size *= d;
        }
        return size;
    }
    bool operator==(const Shape& other) const { return dims_ == other.dims_; }
    bool operator!=(const Shape& other) const { return dims_ != other.dims_; }

private:
    std::vector<int64_t> dims_;
};

}  // namespace ge

namespace AscendC {
using TensorShape = ge::Shape;
}  // namespace AscendC

#endif  // MPNPU_GRAPH_TENSOR_SHAPE_H
