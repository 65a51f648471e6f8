// The nnc-plan lifetime list: "id bytes first_step last_step" per line, so
// that traces from any framework can be planned and compared.
#include "symbolic/alloc/planner.hpp"

#include <charconv>
#include <unordered_map>

namespace nnc::alloc {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

Result<LifetimeList> parse_lifetimes(const std::string& text) {
  LifetimeList list;
  std::unordered_map<std::int64_t, std::size_t> line_of_id;
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    line_no++;
    const std::string where = "line " + std::to_string(line_no) + ": ";
    std::int64_t v[4];
    std::size_t count = 0, i = 0;
    while (i < line.size() && is_space(line[i])) i++;
    if (i == line.size() || line[i] == '#') continue;  // blank or comment
    while (i < line.size()) {
      std::size_t j = i;
      while (j < line.size() && !is_space(line[j])) j++;
      const std::string_view tok = line.substr(i, j - i);
      if (count == 4)
        return Result<LifetimeList>::failure(where + "unexpected \"" + std::string(tok) +
                                             "\" after 'id bytes first_step last_step'");
      std::int64_t x = 0;
      const char* b = tok.data();
      if (!tok.empty() && *b == '+') b++;
      auto [ptr, ec] = std::from_chars(b, tok.data() + tok.size(), x);
      if (ec == std::errc::result_out_of_range)
        return Result<LifetimeList>::failure(where + "integer \"" + std::string(tok) + "\" out of range");
      if (ec != std::errc() || ptr != tok.data() + tok.size() || b == tok.data() + tok.size())
        return Result<LifetimeList>::failure(where + "\"" + std::string(tok) + "\" is not an integer");
      v[count++] = x;
      i = j;
      while (i < line.size() && is_space(line[i])) i++;
    }
    if (count != 4)
      return Result<LifetimeList>::failure(where + "expected 4 integers 'id bytes first_step last_step', found " +
                                           std::to_string(count));
    if (v[1] < 0) return Result<LifetimeList>::failure(where + "negative size " + std::to_string(v[1]));
    if (v[3] < v[2])
      return Result<LifetimeList>::failure(where + "last_step " + std::to_string(v[3]) + " is before first_step " +
                                           std::to_string(v[2]));
    if (auto [it, fresh] = line_of_id.emplace(v[0], line_no); !fresh)
      return Result<LifetimeList>::failure(where + "duplicate id " + std::to_string(v[0]) + " (first on line " +
                                           std::to_string(it->second) + ")");
    TensorSpec t;
    t.size = v[1];
    t.first = v[2];
    t.last = v[3];
    list.ids.push_back(v[0]);
    list.problem.tensors.push_back(std::move(t));
  }
  return list;
}

std::string format_lifetimes(const LifetimeList& list) {
  std::string out = "# id bytes first_step last_step\n";
  for (std::size_t i = 0; i < list.problem.tensors.size(); i++) {
    const TensorSpec& t = list.problem.tensors[i];
    const std::int64_t id = i < list.ids.size() ? list.ids[i] : static_cast<std::int64_t>(i);
    out += std::to_string(id) + ' ' + std::to_string(t.size) + ' ' + std::to_string(t.first) + ' ' +
           std::to_string(t.last) + '\n';
  }
  return out;
}

}  // namespace nnc::alloc
