// A C++ header named `.h` (indexed as C by its name): parsed with the C++ grammar.
#ifndef STORE_TABLE_H_
#define STORE_TABLE_H_

#include <string>
#include <stdint.h>

namespace store {

class Table {
 public:
  explicit Table(const std::string& name);
  ~Table();

  bool Get(const std::string& key, std::string* value) const;
  uint64_t ApproximateSize() const { return size_; }

 private:
  struct Rep;
  Rep* rep_;
  uint64_t size_;
};

template <typename K>
class Cache {
 public:
  void Insert(const K& key) { Touch(key); }

 private:
  void Touch(const K& key);
};

}  // namespace store

#endif  // STORE_TABLE_H_
