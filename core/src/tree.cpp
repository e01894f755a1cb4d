// The non-template half of trees: quoting map keys in structure strings, and reading
// structure strings back to print signatures and name leaves.
#include "glia/core/tree.hpp"

namespace glia {

namespace {

std::string read_quoted(std::string_view s, std::size_t& i) {
  check(i < s.size() && s[i] == '"', "tree structure '", s, "': expected a quoted key at ", i);
  std::string key;
  for (++i; i < s.size() && s[i] != '"'; ++i) {
    if (s[i] == '\\') ++i;
    check(i < s.size(), "tree structure '", s, "': unterminated key");
    key += s[i];
  }
  check(i < s.size(), "tree structure '", s, "': unterminated key");
  ++i;
  return key;
}

void expect(std::string_view s, std::size_t& i, char c) {
  check(i < s.size() && s[i] == c, "tree structure '", s, "': expected '", c, "' at ", i);
  ++i;
}

// One node of the structure at s[i]; appends the paths of its leaves.
void collect_paths(std::string_view s, std::size_t& i, const std::string& path, bool arguments,
                   std::vector<std::string>& paths) {
  check(i < s.size(), "tree structure '", s, "': ends early");
  char open = s[i++];
  if (open == 'T') {
    paths.push_back(path);
    return;
  }
  char close = open == '[' ? ']' : open == '(' ? ')' : open == '{' ? '}' : '\0';
  check(close != '\0', "tree structure '", s, "': unexpected '", open, "' at ", i - 1);
  check(!arguments || open == '(', "tree structure '", s, "': an argument list starts with '('");
  if (i < s.size() && s[i] == close) {
    ++i;
    return;
  }
  for (std::size_t k = 0;; ++k) {
    std::string child;
    if (open == '{') {
      std::string key = read_quoted(s, i);
      expect(s, i, ':');
      child = path + "." + key;
    } else {
      child = arguments ? cat("arg", k) : cat(path, "[", k, "]");
    }
    collect_paths(s, i, child, false, paths);
    check(i < s.size(), "tree structure '", s, "': ends early");
    if (s[i++] == ',') continue;
    check(s[i - 1] == close, "tree structure '", s, "': expected '", close, "' at ", i - 1);
    return;
  }
}

}  // namespace

namespace detail {

void append_quoted(std::string& out, const std::string& key) {
  out += '"';
  for (char c : key) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

}  // namespace detail

std::string tree_text(std::string_view structure, std::span<const std::string> leaf_texts) {
  std::string out;
  std::size_t leaf = 0;
  for (std::size_t i = 0; i < structure.size(); ++i) {
    char c = structure[i];
    if (c == '"') {
      std::size_t start = i;
      read_quoted(structure, i);
      out += structure.substr(start, i - start);
      --i;
    } else if (c == 'T') {
      check(leaf < leaf_texts.size(), "tree_text: the structure ", structure, " has more than ",
            leaf_texts.size(), " leaves");
      out += leaf_texts[leaf++];
    } else {
      out += c;
      if (c == ',' || c == ':') out += ' ';
    }
  }
  check(leaf == leaf_texts.size(), "tree_text: the structure ", structure, " has ", leaf,
        " leaves, got ", leaf_texts.size(), " texts");
  return out;
}

std::vector<std::string> tree_leaf_paths(std::string_view structure, bool argument_list) {
  std::vector<std::string> paths;
  std::size_t i = 0;
  collect_paths(structure, i, "", argument_list, paths);
  check(i == structure.size(), "tree structure '", structure, "': trailing text at ", i);
  return paths;
}

}  // namespace glia
