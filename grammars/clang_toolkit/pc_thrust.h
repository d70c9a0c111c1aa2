// Thrust as Clang reads it (issue 32): any `thrust/*.h` a program includes, where the
// toolkit's own is not read, resolves to this file. It declares the documented shapes of
// what programs use (vectors, device pointers, tuples, iterators, function objects,
// execution policies, the algorithms with their result types) so that host code calling
// Thrust type-checks, a launch taking `thrust::raw_pointer_cast(v.data())` is a launch,
// and the templates it runs are instantiated. Nothing here is compiled or linked: the
// bodies are left out. The standard headers are those Thrust's own bring in.
#pragma once
#include <algorithm>
#include <cassert>
#include <chrono>
#include <functional>
#include <iterator>
#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace thrust {

// ---- execution policies: `thrust::device`, `thrust::cuda::par.on(stream)` ----
struct __pc_policy {
  template <class S> __host__ __device__ const __pc_policy &on(S) const { return *this; }
};
extern const __pc_policy device, host, seq;
namespace cuda { extern const __pc_policy par, par_nosync; }
namespace system { namespace cuda { using thrust::cuda::par; using thrust::cuda::par_nosync; } }

// ---- tuples and pairs ----
using std::tuple; using std::get; using std::make_tuple; using std::tie;
using std::tuple_element; using std::tuple_size; using std::pair; using std::make_pair;

// ---- device memory ----
template <class T> struct device_ptr {
  typedef std::random_access_iterator_tag iterator_category;
  typedef typename std::remove_cv<T>::type value_type;
  typedef long difference_type;
  typedef T *pointer;
  typedef T &reference;
  __host__ __device__ device_ptr(T *p = 0);
  template <class U> __host__ __device__ device_ptr(const device_ptr<U> &);
  __host__ __device__ T *get() const;
  __host__ __device__ T &operator*() const;
  __host__ __device__ T &operator[](long) const;
  __host__ __device__ device_ptr operator+(long) const;
  __host__ __device__ device_ptr operator-(long) const;
  __host__ __device__ long operator-(const device_ptr &) const;
  __host__ __device__ device_ptr &operator+=(long);
  __host__ __device__ device_ptr &operator-=(long);
  __host__ __device__ device_ptr &operator++();
  __host__ __device__ device_ptr operator++(int);
  __host__ __device__ device_ptr &operator--();
  __host__ __device__ bool operator==(const device_ptr &) const;
  __host__ __device__ bool operator!=(const device_ptr &) const;
  __host__ __device__ bool operator<(const device_ptr &) const;
};
template <class T> __host__ __device__ T *raw_pointer_cast(T *p);
template <class T> __host__ __device__ T *raw_pointer_cast(const device_ptr<T> &p);
template <class T> __host__ __device__ device_ptr<T> device_pointer_cast(T *p);
template <class T> __host__ __device__ device_ptr<T> device_pointer_cast(const device_ptr<T> &);
template <class T> device_ptr<T> device_malloc(size_t);
template <class T> void device_free(device_ptr<T>);

template <class T, class Pointer> struct __pc_vector {
  typedef T value_type;
  typedef Pointer iterator;
  typedef Pointer const_iterator;
  typedef T &reference;
  typedef const T &const_reference;
  typedef Pointer pointer;
  typedef size_t size_type;
  __pc_vector();
  explicit __pc_vector(size_t, const T & = T());
  template <class It> __pc_vector(It, It);
  template <class V> __pc_vector(const V &);
  __pc_vector(std::initializer_list<T>);
  template <class V> __pc_vector &operator=(const V &);
  size_t size() const;
  bool empty() const;
  size_t capacity() const;
  void resize(size_t, const T & = T());
  void reserve(size_t);
  void clear();
  void shrink_to_fit();
  void push_back(const T &);
  void pop_back();
  void swap(__pc_vector &);
  template <class It> void assign(It, It);
  void assign(size_t, const T &);
  Pointer data();
  Pointer data() const;
  Pointer begin();
  Pointer begin() const;
  Pointer end();
  Pointer end() const;
  Pointer cbegin() const;
  Pointer cend() const;
  T &operator[](size_t);
  const T &operator[](size_t) const;
  T &front();
  T &back();
};
template <class T, class A = void> struct device_vector : __pc_vector<T, device_ptr<T>> {
  using __pc_vector<T, device_ptr<T>>::__pc_vector;
  using __pc_vector<T, device_ptr<T>>::operator=;
};
template <class T, class A = void> struct host_vector : __pc_vector<T, T *> {
  using __pc_vector<T, T *>::__pc_vector;
  using __pc_vector<T, T *>::operator=;
};
template <class T, class A = void> struct universal_vector : __pc_vector<T, T *> {
  using __pc_vector<T, T *>::__pc_vector;
  using __pc_vector<T, T *>::operator=;
};

// ---- fancy iterators ----
template <class T, class Reference> struct __pc_iterator {
  typedef std::random_access_iterator_tag iterator_category;
  typedef T value_type;
  typedef long difference_type;
  typedef T *pointer;
  typedef Reference reference;
  __host__ __device__ Reference operator*() const;
  __host__ __device__ Reference operator[](long) const;
  __host__ __device__ long operator-(const __pc_iterator &) const;
  __host__ __device__ bool operator==(const __pc_iterator &) const;
  __host__ __device__ bool operator!=(const __pc_iterator &) const;
  __host__ __device__ bool operator<(const __pc_iterator &) const;
};
#define PC_THRUST_ITERATOR_OPERATORS(I)                                        \
  __host__ __device__ I operator+(long) const;                                 \
  __host__ __device__ I operator-(long) const;                                 \
  using __pc_iterator<value_type, reference>::operator-;                       \
  __host__ __device__ I &operator+=(long);                                     \
  __host__ __device__ I &operator++();                                         \
  __host__ __device__ I operator++(int);
template <class T> struct counting_iterator : __pc_iterator<T, T> {
  typedef T value_type; typedef T reference;
  __host__ __device__ counting_iterator(T = T());
  PC_THRUST_ITERATOR_OPERATORS(counting_iterator)
};
template <class T> struct constant_iterator : __pc_iterator<T, T> {
  typedef T value_type; typedef T reference;
  __host__ __device__ constant_iterator(T = T(), long = 0);
  PC_THRUST_ITERATOR_OPERATORS(constant_iterator)
};
template <class It> using __pc_value_of = typename std::iterator_traits<It>::value_type;
template <class F, class It, class R = void, class V = void> struct transform_iterator
    : __pc_iterator<typename std::decay<decltype(std::declval<F>()(
                        std::declval<__pc_value_of<It>>()))>::type,
                    typename std::decay<decltype(std::declval<F>()(
                        std::declval<__pc_value_of<It>>()))>::type> {
  typedef typename std::decay<decltype(std::declval<F>()(
      std::declval<__pc_value_of<It>>()))>::type value_type;
  typedef value_type reference;
  __host__ __device__ transform_iterator(It, F);
  PC_THRUST_ITERATOR_OPERATORS(transform_iterator)
};
template <class Tuple> struct zip_iterator;
template <class... It> struct zip_iterator<std::tuple<It...>>
    : __pc_iterator<std::tuple<__pc_value_of<It>...>, std::tuple<__pc_value_of<It>...>> {
  typedef std::tuple<__pc_value_of<It>...> value_type;
  typedef value_type reference;
  __host__ __device__ zip_iterator(std::tuple<It...>);
  PC_THRUST_ITERATOR_OPERATORS(zip_iterator)
};
template <class E, class I> struct permutation_iterator
    : __pc_iterator<__pc_value_of<E>, __pc_value_of<E> &> {
  typedef __pc_value_of<E> value_type;
  typedef value_type &reference;
  __host__ __device__ permutation_iterator(E, I);
  PC_THRUST_ITERATOR_OPERATORS(permutation_iterator)
};
struct __pc_discard { template <class T> __host__ __device__ void operator=(const T &) const; };
template <class S = void> struct discard_iterator : __pc_iterator<__pc_discard, __pc_discard> {
  typedef __pc_discard value_type; typedef __pc_discard reference;
  __host__ __device__ discard_iterator(long = 0);
  PC_THRUST_ITERATOR_OPERATORS(discard_iterator)
};
#undef PC_THRUST_ITERATOR_OPERATORS
template <class T> __host__ __device__ counting_iterator<T> make_counting_iterator(T);
template <class T> __host__ __device__ constant_iterator<T> make_constant_iterator(T, long = 0);
template <class It, class F> __host__ __device__ transform_iterator<F, It>
make_transform_iterator(It, F);
template <class... It> __host__ __device__ zip_iterator<std::tuple<It...>>
make_zip_iterator(std::tuple<It...>);
template <class... It> __host__ __device__ zip_iterator<std::tuple<It...>>
make_zip_iterator(It...);
template <class E, class I> __host__ __device__ permutation_iterator<E, I>
make_permutation_iterator(E, I);
__host__ __device__ discard_iterator<> make_discard_iterator(long = 0);
template <class It> struct iterator_difference { typedef long type; };
template <class It> struct iterator_value { typedef __pc_value_of<It> type; };
template <class It> using iterator_difference_t = long;
template <class It> using iterator_value_t = __pc_value_of<It>;

// ---- function objects ----
#define PC_THRUST_BINARY(name, op)                                             \
  template <class T = void> struct name {                                      \
    typedef T first_argument_type; typedef T second_argument_type;            \
    __host__ __device__ constexpr auto operator()(const T &a, const T &b) const \
        -> decltype(a op b) { return a op b; }                                 \
  };                                                                           \
  template <> struct name<void> {                                              \
    template <class A, class B> __host__ __device__ constexpr auto             \
    operator()(const A &a, const B &b) const -> decltype(a op b) { return a op b; } \
  };
PC_THRUST_BINARY(plus, +) PC_THRUST_BINARY(minus, -) PC_THRUST_BINARY(multiplies, *)
PC_THRUST_BINARY(divides, /) PC_THRUST_BINARY(modulus, %) PC_THRUST_BINARY(equal_to, ==)
PC_THRUST_BINARY(not_equal_to, !=) PC_THRUST_BINARY(less, <) PC_THRUST_BINARY(greater, >)
PC_THRUST_BINARY(less_equal, <=) PC_THRUST_BINARY(greater_equal, >=)
PC_THRUST_BINARY(logical_and, &&) PC_THRUST_BINARY(logical_or, ||)
PC_THRUST_BINARY(bit_and, &) PC_THRUST_BINARY(bit_or, |) PC_THRUST_BINARY(bit_xor, ^)
#undef PC_THRUST_BINARY
template <class T = void> struct maximum {
  __host__ __device__ constexpr T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};
template <class T = void> struct minimum {
  __host__ __device__ constexpr T operator()(const T &a, const T &b) const { return a < b ? a : b; }
};
template <class T = void> struct identity {
  __host__ __device__ constexpr const T &operator()(const T &a) const { return a; }
};
template <class T = void> struct negate {
  __host__ __device__ constexpr T operator()(const T &a) const { return -a; }
};
template <class T = void> struct logical_not {
  __host__ __device__ constexpr bool operator()(const T &a) const { return !a; }
};
template <class A, class R> struct unary_function { typedef A argument_type; typedef R result_type; };
template <class A, class B, class R> struct binary_function {
  typedef A first_argument_type; typedef B second_argument_type; typedef R result_type;
};

// ---- complex numbers ----
template <class T> struct complex {
  typedef T value_type;
  __host__ __device__ complex(const T & = T(), const T & = T());
  template <class U> __host__ __device__ complex(const complex<U> &);
  __host__ __device__ T real() const;
  __host__ __device__ T imag() const;
  __host__ __device__ void real(T);
  __host__ __device__ void imag(T);
  __host__ __device__ complex &operator+=(const complex &);
  __host__ __device__ complex &operator-=(const complex &);
  __host__ __device__ complex &operator*=(const complex &);
  __host__ __device__ complex &operator/=(const complex &);
  __host__ __device__ complex &operator*=(const T &);
  __host__ __device__ complex &operator/=(const T &);
};
#define PC_THRUST_COMPLEX_OP(op)                                                     \
  template <class T> __host__ __device__ complex<T> operator op(const complex<T> &, const complex<T> &); \
  template <class T> __host__ __device__ complex<T> operator op(const complex<T> &, const T &);         \
  template <class T> __host__ __device__ complex<T> operator op(const T &, const complex<T> &);
PC_THRUST_COMPLEX_OP(+) PC_THRUST_COMPLEX_OP(-) PC_THRUST_COMPLEX_OP(*) PC_THRUST_COMPLEX_OP(/)
#undef PC_THRUST_COMPLEX_OP
template <class T> __host__ __device__ complex<T> operator-(const complex<T> &);
template <class T> __host__ __device__ bool operator==(const complex<T> &, const complex<T> &);
template <class T> __host__ __device__ bool operator!=(const complex<T> &, const complex<T> &);
template <class T> __host__ __device__ T abs(const complex<T> &);
template <class T> __host__ __device__ T arg(const complex<T> &);
template <class T> __host__ __device__ T norm(const complex<T> &);
template <class T> __host__ __device__ complex<T> conj(const complex<T> &);
template <class T> __host__ __device__ complex<T> polar(const T &, const T & = T());
template <class T> __host__ __device__ complex<T> exp(const complex<T> &);
template <class T> __host__ __device__ complex<T> log(const complex<T> &);
template <class T> __host__ __device__ complex<T> sqrt(const complex<T> &);
template <class T, class U> __host__ __device__ complex<T> pow(const complex<T> &, const U &);

// ---- random numbers ----
struct default_random_engine {
  typedef unsigned result_type;
  __host__ __device__ default_random_engine(unsigned = 1);
  __host__ __device__ void seed(unsigned = 1);
  __host__ __device__ void discard(unsigned long long);
  __host__ __device__ unsigned operator()();
};
typedef default_random_engine minstd_rand;
namespace random { using thrust::default_random_engine; using thrust::minstd_rand; }
template <class T = int> struct uniform_int_distribution {
  __host__ __device__ uniform_int_distribution(T = 0, T = std::numeric_limits<T>::max());
  template <class E> __host__ __device__ T operator()(E &);
};
template <class T = double> struct uniform_real_distribution {
  __host__ __device__ uniform_real_distribution(T = 0, T = 1);
  template <class E> __host__ __device__ T operator()(E &);
};
template <class T = double> struct normal_distribution {
  __host__ __device__ normal_distribution(T = 0, T = 1);
  template <class E> __host__ __device__ T operator()(E &);
};

// ---- algorithms ----
// Each takes an optional execution policy first; the result types are the documented
// ones, read from the arguments that follow the policy.
template <class T> using __pc_decay = typename std::decay<T>::type;
template <class... A> struct __pc_arguments { typedef std::tuple<> type; };
template <class A0, class... A> struct __pc_arguments<A0, A...> {
  typedef typename std::conditional<
      std::is_base_of<__pc_policy, __pc_decay<A0>>::value, std::tuple<__pc_decay<A>...>,
      std::tuple<__pc_decay<A0>, __pc_decay<A>...>>::type type;
};
template <size_t I, class... A> using __pc_argument =
    typename std::tuple_element<I, typename __pc_arguments<A...>::type>::type;
// a value (reduce, transform_reduce, inner_product): the initial value at `I` when
// given, else the first range's element type
template <size_t I, class Tu, bool = (std::tuple_size<Tu>::value > I)> struct __pc_init {
  typedef typename std::tuple_element<I, Tu>::type type;
};
template <size_t I, class Tu> struct __pc_init<I, Tu, false> {
  typedef __pc_value_of<typename std::tuple_element<0, Tu>::type> type;
};
template <size_t I, class... A> using __pc_value_at =
    typename __pc_init<I, typename __pc_arguments<A...>::type>::type;

template <class... A> using __pc_before_last = typename std::tuple_element<
    std::tuple_size<typename __pc_arguments<A...>::type>::value - 2,
    typename __pc_arguments<A...>::type>::type;
#define PC_THRUST_VOID(name) \
  template <class... A> __host__ __device__ void name(A &&...);
#define PC_THRUST_FIRST(name) \
  template <class... A> __host__ __device__ __pc_argument<0, A...> name(A &&...);
#define PC_THRUST_OUTPUT(name, I) \
  template <class... A> __host__ __device__ __pc_argument<I, A...> name(A &&...);
#define PC_THRUST_TYPED(name, ...) \
  template <class... A> __host__ __device__ __VA_ARGS__ name(A &&...);
PC_THRUST_VOID(sort) PC_THRUST_VOID(stable_sort) PC_THRUST_VOID(sort_by_key)
PC_THRUST_VOID(stable_sort_by_key) PC_THRUST_VOID(sequence) PC_THRUST_VOID(fill)
PC_THRUST_VOID(shuffle) PC_THRUST_VOID(scatter) PC_THRUST_VOID(scatter_if)
PC_THRUST_VOID(replace) PC_THRUST_VOID(replace_if) PC_THRUST_VOID(tabulate)
PC_THRUST_VOID(reverse) PC_THRUST_VOID(uninitialized_fill) PC_THRUST_VOID(swap_ranges)
PC_THRUST_FIRST(remove) PC_THRUST_FIRST(remove_if) PC_THRUST_FIRST(unique)
PC_THRUST_FIRST(max_element) PC_THRUST_FIRST(min_element) PC_THRUST_FIRST(find)
PC_THRUST_FIRST(find_if) PC_THRUST_FIRST(find_if_not) PC_THRUST_FIRST(partition)
PC_THRUST_FIRST(stable_partition) PC_THRUST_FIRST(lower_bound)
PC_THRUST_FIRST(upper_bound) PC_THRUST_FIRST(for_each) PC_THRUST_FIRST(for_each_n)
PC_THRUST_FIRST(fill_n) PC_THRUST_FIRST(adjacent_find) PC_THRUST_FIRST(is_sorted_until)
PC_THRUST_OUTPUT(copy, 2) PC_THRUST_OUTPUT(copy_n, 2)
// with a stencil or a second range, the output is one later: the last but one
PC_THRUST_TYPED(copy_if, __pc_before_last<A...>)
PC_THRUST_TYPED(transform, __pc_before_last<A...>)
PC_THRUST_TYPED(remove_copy_if, __pc_before_last<A...>)
PC_THRUST_OUTPUT(inclusive_scan, 2) PC_THRUST_OUTPUT(exclusive_scan, 2)
PC_THRUST_OUTPUT(transform_inclusive_scan, 2) PC_THRUST_OUTPUT(transform_exclusive_scan, 2)
PC_THRUST_OUTPUT(inclusive_scan_by_key, 3) PC_THRUST_OUTPUT(exclusive_scan_by_key, 3)
PC_THRUST_OUTPUT(gather, 2) PC_THRUST_OUTPUT(gather_if, 3) PC_THRUST_OUTPUT(remove_copy, 2)
PC_THRUST_OUTPUT(unique_copy, 2)
PC_THRUST_OUTPUT(adjacent_difference, 2) PC_THRUST_OUTPUT(merge, 4)
PC_THRUST_OUTPUT(set_union, 4) PC_THRUST_OUTPUT(set_intersection, 4)
PC_THRUST_OUTPUT(set_difference, 4)
PC_THRUST_TYPED(count, long) PC_THRUST_TYPED(count_if, long) PC_THRUST_TYPED(distance, long)
PC_THRUST_TYPED(is_sorted, bool) PC_THRUST_TYPED(equal, bool) PC_THRUST_TYPED(all_of, bool)
PC_THRUST_TYPED(any_of, bool) PC_THRUST_TYPED(none_of, bool)
PC_THRUST_TYPED(binary_search, bool)
PC_THRUST_TYPED(minmax_element, std::pair<__pc_argument<0, A...>, __pc_argument<0, A...>>)
PC_THRUST_TYPED(unique_by_key, std::pair<__pc_argument<0, A...>, __pc_argument<2, A...>>)
PC_THRUST_TYPED(reduce_by_key, std::pair<__pc_argument<3, A...>, __pc_argument<4, A...>>)
PC_THRUST_TYPED(reduce, __pc_value_at<2, A...>)
PC_THRUST_TYPED(transform_reduce, __pc_value_at<3, A...>)
PC_THRUST_TYPED(inner_product, __pc_value_at<3, A...>)
#undef PC_THRUST_VOID
#undef PC_THRUST_FIRST
#undef PC_THRUST_OUTPUT
#undef PC_THRUST_TYPED
}  // namespace thrust
