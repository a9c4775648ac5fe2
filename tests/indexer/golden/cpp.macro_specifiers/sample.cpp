// Specifier macros (`LIB_CONSTEXPR`, `LIB_INLINE`) before constructors and methods, annotation
// macros after them, conversion operators and template specializations, as C++ libraries
// write them.
#include <cstddef>

#define LIB_CONSTEXPR constexpr
#define LIB_INLINE inline

namespace lib {

template <typename T> struct is_small : std::false_type {};
template <> struct is_small<char> : std::true_type {};
template <> struct is_small<short> : std::true_type {};

template <typename T> class span_buffer {
 private:
  T* data_;
  size_t size_;

 protected:
  LIB_CONSTEXPR span_buffer(T* data, size_t size) noexcept
      : data_(data), size_(size) {
    if (size_ == 0) data_ = nullptr;
  }

 public:
  LIB_CONSTEXPR LIB_INLINE span_buffer() : span_buffer(nullptr, 0) {}
  constexpr LIB_INLINE size_t size() const noexcept { return size_; }
  explicit operator bool() const noexcept { return size_ != 0; }
  operator const T*() const { return data_; }
  LIB_CONSTEXPR void clear() { size_ = 0; }
};

class LIB_LOCKABLE guarded {
 public:
  void lock() LIB_ACQUIRE() { ++held_; }
  void unlock() LIB_RELEASE() { --held_; }
  int held() const LIB_REQUIRES(this) { return held_; }

 private:
  int held_ LIB_GUARDED_BY(this);
};

template <typename T> LIB_CONSTEXPR auto first(const span_buffer<T>& b) -> const T* {
  return static_cast<const T*>(b);
}

}  // namespace lib
