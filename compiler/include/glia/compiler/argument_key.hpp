// A jitted call's arguments: the one walk over their trees that collects the leaves'
// addresses and writes (or compares) the argument key its cache is keyed by. Internal to
// jit and compile (glia::detail).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "glia/core/tensor.hpp"
#include "glia/core/tree.hpp"

namespace glia::detail {

// The argument list visited as one tree "(a,b,..)" (see TreeTraits::visit).
template <class V, class... Args>
void visit_arguments(V& v, const Args&... args) {
  v.open('(', sizeof...(Args));
  [[maybe_unused]] bool first = true;
  ((first ? void() : v.next(), first = false, TreeTraits<Args>::visit(args, v)), ...);
  v.close(')');
}

template <class... Args>
std::string arguments_structure(const Args&... args) {
  std::string structure;
  StructureWriter writer{structure};
  visit_arguments(writer, args...);
  return structure;
}

// The argument list's structure, its leaves appended.
template <class L, class... Args>
std::string flatten_arguments(std::vector<L>& leaves, const Args&... args) {
  (TreeTraits<Args>::flatten(args, leaves), ...);
  return arguments_structure(args...);
}

// What one call keeps of its arguments while it runs, in buffers its thread reuses: the
// leaves' addresses (the arguments outlive the call: no copies, no counts), and the
// argument key. Buffers that held as much on the last call take this one's without
// allocating, so a warm call allocates nothing here. Leases nest, one set of buffers per
// depth: a function traced on a miss may call jitted functions on Tensors of its own.
class CallArguments {
 public:
  CallArguments();   // leases this thread's buffers for the next depth
  ~CallArguments();  // gives the lease back
  CallArguments(const CallArguments&) = delete;
  CallArguments& operator=(const CallArguments&) = delete;

  void push(const Tensor& t) {
    if (size_ < leaves_->size())
      (*leaves_)[size_] = &t;
    else
      leaves_->push_back(&t);
    ++size_;
  }
  // The key is written in place, inline: these run for every node of every call's
  // arguments, and std::string::append would cost a call each.
  void append(const char* bytes, std::size_t n) {
    if (n > key_capacity_ - key_size_) grow_key(n);
    std::memcpy(key_data_ + key_size_, bytes, n);
    key_size_ += n;
  }
  void append(char c) {
    if (key_size_ == key_capacity_) grow_key(1);
    key_data_[key_size_++] = c;
  }
  // LEB128: sizes, ranks and dims are small numbers, mostly one byte each.
  void append_number(std::uint64_t v) {
    if (key_capacity_ - key_size_ < 10) grow_key(10);
    for (; v >= 0x80; v >>= 7) key_data_[key_size_++] = static_cast<char>(v | 0x80);
    key_data_[key_size_++] = static_cast<char>(v);
  }
  // Forgets the leaves and key written so far, to walk the same arguments again.
  void restart() {
    size_ = 0;
    key_size_ = 0;
  }
  std::span<const Tensor* const> leaves() const { return {leaves_->data(), size_}; }
  std::string_view key() const { return {key_data_, key_size_}; }
  // Copies of the leaves, for an executable that takes its inputs over (donation): made
  // before the caller lets the arguments go.
  std::vector<Tensor> copy_leaves() const;

 private:
  void grow_key(std::size_t n);
  std::vector<const Tensor*>* leaves_;
  std::size_t size_ = 0;
  std::string* key_;  // storage only: its first key_size_ chars are the key
  char* key_data_;
  std::size_t key_size_ = 0, key_capacity_;
};

// What a walk writes the key into when it compares instead (KeyWalk<KeyCompare>): the
// bytes are checked against a key written before, as they come, and nothing is stored.
class KeyCompare {
 public:
  explicit KeyCompare(std::string_view expected)
      : at_(expected.data()), end_(expected.data() + expected.size()) {}
  void append(char c) { same_ = same_ && at_ != end_ && *at_++ == c; }
  void append(const char* bytes, std::size_t n) {  // map keys: a few bytes, no call
    bool same = same_ && static_cast<std::size_t>(end_ - at_) >= n;
    const char* at = at_;  // locals: a char store could alias the members
    for (std::size_t i = 0; same && i < n; ++i) same = at[i] == bytes[i];
    same_ = same;
    if (same) at_ += n;
  }
  void append_number(std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) append(static_cast<char>(v | 0x80));
    append(static_cast<char>(v));
  }
  // Every byte equal, and the whole expected key read.
  bool matched() const { return same_ && at_ == end_; }

 private:
  const char* at_;
  const char* end_;
  bool same_ = true;
};

// The one walk a call makes over its arguments: it collects the leaves into `call` and
// writes the argument key into `key` (the call's own buffer, or a KeyCompare): the
// argument list's structure (container kinds and sizes, map keys) and each leaf's dtype
// and shape as bytes. Sizes come before children, so the key reads back one way only:
// equal keys are equal signatures, and a hit is a hash of the key and one comparison with
// the stored entry's, no text built; or, for the entry the last call found, a walk that
// compares as it goes.
template <class Key>
class KeyWalk {
 public:
  KeyWalk(CallArguments& call, Key& key) : call_(call), key_(key) {}
  void leaf(const Tensor& t) {
    call_.push(t);
    if (t.defined()) return leaf(t.type());
    undefined_ = true;  // no entry can match: the miss path names the leaf
    key_.append('U');
  }
  void leaf(const TensorType& t) {  // the templates of compile()
    key_.append('T');
    key_.append(static_cast<char>(t.dtype));
    key_.append_number(static_cast<std::uint64_t>(t.shape.rank()));
    for (std::int64_t dim : t.shape.dims()) key_.append_number(static_cast<std::uint64_t>(dim));
  }
  void open(char bracket, std::size_t children) {
    key_.append(bracket);
    key_.append_number(children);
  }
  void next() {}
  void key(const std::string& k) {
    key_.append_number(k.size());
    key_.append(k.data(), k.size());
  }
  void close(char) {}
  bool any_undefined() const { return undefined_; }

 private:
  CallArguments& call_;
  Key& key_;
  bool undefined_ = false;
};

// The walk that writes the key into the call's buffer.
class ArgumentWalk : public KeyWalk<CallArguments> {
 public:
  explicit ArgumentWalk(CallArguments& call) : KeyWalk(call, call) {}
};

// Whether the arguments' key is `expected`, compared as they are walked; their leaves
// are collected into `call` either way (restart() it before walking them again).
template <class... Args>
bool arguments_match(CallArguments& call, std::string_view expected, const Args&... args) {
  KeyCompare same(expected);
  KeyWalk<KeyCompare> walk(call, same);
  visit_arguments(walk, args...);
  return same.matched() && !walk.any_undefined();
}

}  // namespace glia::detail
