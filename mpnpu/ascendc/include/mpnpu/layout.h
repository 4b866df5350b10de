// Layout, the auxiliary data structure that maps a multi-dimensional coordinate to a linear element
// index (the AscendC-namespace form this chip class documents; TransData takes its shapes in one).
//
//   Shape<Ts...> / Stride<Ts...> / Coord<Ts...>   Std::tuple aliases, made by MakeShape / MakeStride /
//                                                 MakeCoord (each entry an integer, a Std::Int<N>
//                                                 constant, or a nested tuple)
//   Layout<ShapeType, StrideType>                 the pair; GetShape(), GetStride(), layout() and
//                                                 operator()(coord) == Crd2Idx(coord, shape, stride)
//   MakeLayout(shape, stride), is_layout<T>, Crd2Idx(coord, layout), Crd2Idx(coord, shape, stride)
//
// Crd2Idx: a coordinate with the shape's rank gives sum(c_i * s_i), each entry taken recursively (an
// integer coordinate against a nested shape is first split over that shape's entries, the first
// entry fastest: c % d0, (c / d0) % d1, ..., the last entry taking what is left; an integer against
// an integer is c * s). A coordinate of a different rank than the stride is a compile-time error, as
// is a stride whose rank differs from the shape's (MakeStride() with no entries makes a Layout that
// carries only a shape: TransData reads nothing else, and indexing it does not compile). When every
// entry is a Std::Int constant, the index is one too (decltype(index)::value); otherwise it is a
// size_t. Stride entries are in elements, as the pages say. The Te-namespace Tensor API forms
// (Layout::Shape<I...>(), Rank, Size, Capacity, MakeLayout(shape) with a derived stride, frame and
// pattern layouts) are that API's, documented for other chips, and are not here.
#ifndef MPNPU_LAYOUT_H
#define MPNPU_LAYOUT_H

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace AscendC {

namespace Std {
// A size_t compile-time constant (Std::Int<16>{}), as the pages spell it.
template <size_t v>
using Int = std::integral_constant<size_t, v>;
}  // namespace Std

template <typename... Shapes>
using Shape = std::tuple<Shapes...>;
template <typename... Strides>
using Stride = std::tuple<Strides...>;
template <typename... Coords>
using Coord = std::tuple<Coords...>;

template <typename... Ts>
constexpr Shape<Ts...> MakeShape(const Ts&... t) {
    return Shape<Ts...>(t...);
}
template <typename... Ts>
constexpr Stride<Ts...> MakeStride(const Ts&... t) {
    return Stride<Ts...>(t...);
}
template <typename... Ts>
constexpr Coord<Ts...> MakeCoord(const Ts&... t) {
    return Coord<Ts...>(t...);
}

}  // namespace AscendC

namespace mpnpu {
namespace layout {

template <typename T>
struct is_tuple : std::false_type {};
template <typename... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};

template <typename T>
struct is_static : std::false_type {};
template <typename V, V v>
struct is_static<std::integral_constant<V, v>> : std::true_type {};
template <typename... Ts>
struct is_static<std::tuple<Ts...>> : std::bool_constant<(is_static<Ts>::value && ...)> {};

template <typename T>
constexpr size_t value_of(const T& v) {
    return static_cast<size_t>(v);
}

// The product of a (possibly nested) shape's entries.
template <typename S>
constexpr size_t size_of(const S& s) {
    if constexpr (is_tuple<S>::value) {
        return std::apply([](const auto&... e) { return (size_t(1) * ... * size_of(e)); }, s);
    } else {
        return value_of(s);
    }
}

template <typename C, typename S, typename D>
constexpr size_t crd2idx(const C& c, const S& s, const D& d);

// An integer coordinate over a nested shape: split it, the first entry fastest, the last one the rest.
template <size_t I, typename S, typename D>
constexpr size_t split(size_t c, const S& s, const D& d) {
    constexpr size_t n = std::tuple_size_v<S>;
    if constexpr (I + 1 == n) {
        return crd2idx(c, std::get<I>(s), std::get<I>(d));
    } else {
        const size_t extent = size_of(std::get<I>(s));
        const size_t here = extent ? c % extent : c;
        const size_t rest = extent ? c / extent : 0;
        return crd2idx(here, std::get<I>(s), std::get<I>(d)) + split<I + 1>(rest, s, d);
    }
}

template <typename C, typename S, typename D, size_t... I>
constexpr size_t each(const C& c, const S& s, const D& d, std::index_sequence<I...>) {
    return (size_t(0) + ... + crd2idx(std::get<I>(c), std::get<I>(s), std::get<I>(d)));
}

template <typename C, typename S, typename D>
constexpr size_t crd2idx(const C& c, const S& s, const D& d) {
    if constexpr (is_tuple<C>::value) {
        static_assert(is_tuple<S>::value && is_tuple<D>::value,
                      "Crd2Idx: a nested coordinate needs a nested shape and stride at the same place");
        static_assert(std::tuple_size_v<C> == std::tuple_size_v<S> && std::tuple_size_v<S> == std::tuple_size_v<D>,
                      "Crd2Idx: the coordinate, the shape and the stride must have the same number of entries");
        return each(c, s, d, std::make_index_sequence<std::tuple_size_v<C>>{});
    } else if constexpr (is_tuple<S>::value) {
        static_assert(is_tuple<D>::value && std::tuple_size_v<S> == std::tuple_size_v<D>,
                      "Crd2Idx: the stride must have the shape's structure");
        if constexpr (std::tuple_size_v<S> == 0) return 0;
        else return split<0>(value_of(c), s, d);
    } else {
        static_assert(!is_tuple<D>::value, "Crd2Idx: the stride must have the shape's structure");
        return value_of(c) * value_of(d);
    }
}

// The index as a Std::Int when everything is a constant, else as a size_t.
template <typename C, typename S, typename D>
constexpr auto index(const C& c, const S& s, const D& d) {
    if constexpr (is_static<C>::value && is_static<S>::value && is_static<D>::value) {
        constexpr size_t v = crd2idx(C{}, S{}, D{});
        return std::integral_constant<size_t, v>{};
    } else {
        return crd2idx(c, s, d);
    }
}

}  // namespace layout
}  // namespace mpnpu

namespace AscendC {

template <typename ShapeType, typename StrideType>
struct Layout : private std::tuple<ShapeType, StrideType> {
    static_assert(mpnpu::layout::is_tuple<ShapeType>::value && mpnpu::layout::is_tuple<StrideType>::value,
                  "Layout: the shape and the stride must be Std::tuple (MakeShape / MakeStride)");
    static_assert(std::tuple_size_v<StrideType> == 0 || std::tuple_size_v<StrideType> == std::tuple_size_v<ShapeType>,
                  "Layout: the stride must have one entry per shape entry (or none: a shape-only Layout)");

    constexpr Layout(const ShapeType& shape = {}, const StrideType& stride = {})
        : std::tuple<ShapeType, StrideType>(shape, stride) {}

    constexpr Layout& layout() { return *this; }
    constexpr const Layout& layout() const { return *this; }
    constexpr ShapeType& GetShape() { return std::get<0>(base()); }
    constexpr const ShapeType& GetShape() const { return std::get<0>(base()); }
    constexpr StrideType& GetStride() { return std::get<1>(base()); }
    constexpr const StrideType& GetStride() const { return std::get<1>(base()); }

    template <typename CoordType>
    constexpr auto operator()(const CoordType& coord) const {
        static_assert(std::tuple_size_v<StrideType> == std::tuple_size_v<ShapeType>,
                      "Layout: this Layout has no stride (MakeStride() was empty), so it cannot map a coordinate");
        return mpnpu::layout::index(coord, GetShape(), GetStride());
    }

private:
    constexpr std::tuple<ShapeType, StrideType>& base() { return *this; }
    constexpr const std::tuple<ShapeType, StrideType>& base() const { return *this; }
};

template <typename ShapeType, typename StrideType>
constexpr auto MakeLayout(const ShapeType& shape, const StrideType& stride) {
    return Layout<ShapeType, StrideType>(shape, stride);
}

template <typename T>
struct is_layout : std::false_type {};
template <typename ShapeType, typename StrideType>
struct is_layout<Layout<ShapeType, StrideType>> : std::true_type {};

template <typename CoordType, typename ShapeType, typename StrideType>
constexpr auto Crd2Idx(const CoordType& coord, const Layout<ShapeType, StrideType>& layout) {
    return layout(coord);
}
template <typename CoordType, typename ShapeType, typename StrideType>
constexpr auto Crd2Idx(const CoordType& coord, const ShapeType& shape, const StrideType& stride) {
    return mpnpu::layout::index(coord, shape, stride);
}

}  // namespace AscendC

#endif  // MPNPU_LAYOUT_H
