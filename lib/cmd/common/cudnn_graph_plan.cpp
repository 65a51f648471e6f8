// cudnn_graph_plan.hpp: a cudnn_plan::Conv as the graph API's numbers.
#include "cmd/common/cudnn_graph_plan.hpp"

#include <cstring>

#include "nnc/ccv_nnc.h"

namespace nnc::cudnn_graph_plan {

namespace {

bool refuse(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

}  // namespace

GraphTensor image(const cudnn_plan::Tensor4& t) {
  GraphTensor g;
  for (int i = 0; i < 4; i++) g.dim[i] = t.dim[i], g.stride[i] = t.stride[i];
  return g;
}

GraphTensor filter(const cudnn_plan::Filter& f) {
  GraphTensor g;
  const int64_t K = f.dim[0], C = f.dim[1], R = f.dim[2], S = f.dim[3];
  g.dim[0] = K, g.dim[1] = C, g.dim[2] = R, g.dim[3] = S;
  if (f.nhwc) {  // memory K, R, S, C
    g.stride[0] = R * S * C, g.stride[1] = 1, g.stride[2] = S * C, g.stride[3] = C;
  } else {  // memory K, C, R, S
    g.stride[0] = C * R * S, g.stride[1] = R * S, g.stride[2] = S, g.stride[3] = 1;
  }
  return g;
}

GraphConv make(Op op, const cudnn_plan::Conv& p, const cudnn_plan::Tensor4& x, const cudnn_plan::Tensor4& y) {
  GraphConv g;
  g.op = op;
  g.datatype = p.datatype;
  g.x = image(x);
  g.w = filter(p.w);
  g.y = image(y);
  for (int i = 0; i < 2; i++) g.pad[i] = p.pad[i], g.stride[i] = p.stride[i], g.dilation[i] = p.dilation[i];
  return g;
}

bool consistent(const GraphConv& g, int groups, std::string* why) {
  for (int i = 0; i < 4; i++)
    if (g.x.dim[i] <= 0 || g.w.dim[i] <= 0 || g.y.dim[i] <= 0)
      return refuse(why, "a tensor of the convolution is empty");
  for (int i = 0; i < 2; i++)
    if (g.pad[i] < 0 || g.stride[i] <= 0 || g.dilation[i] <= 0)
      return refuse(why, "pads, strides and dilations out of range");
  if (g.x.dim[1] % g.w.dim[1] != 0 || g.x.dim[1] / g.w.dim[1] != groups)
    return refuse(why, "the groups the graph API infers from the channels are not the plan's");
  if (g.w.dim[0] % groups != 0 || g.y.dim[1] != g.w.dim[0])
    return refuse(why, "the output's channels are not the filter count");
  if (g.y.dim[0] != g.x.dim[0]) return refuse(why, "batch sizes differ");
  for (int i = 0; i < 2; i++) {
    const int64_t span = (g.w.dim[2 + i] - 1) * g.dilation[i] + 1;
    const int64_t in = g.x.dim[2 + i] + 2 * g.pad[i];
    if (in < span) return refuse(why, "the dilated filter is larger than the padded input");
    if ((in - span) / g.stride[i] + 1 != g.y.dim[2 + i])
      return refuse(why, "the output extent is not the one the pads, strides and dilations give");
  }
  return true;
}

int64_t byte_alignment(uintptr_t address) {
  if (address == 0) return 16;
  int64_t a = 1;
  while (a < 16 && (address & static_cast<uintptr_t>(a)) == 0) a *= 2;
  return a;
}

bool engine_allowed(int datatype, bool allow_tf32, bool tensor_core, bool down_convert, bool reduced_precision) {
  if (reduced_precision) return false;
  if (datatype == CCV_32F && !allow_tf32 && (tensor_core || down_convert)) return false;
  return true;
}

std::vector<int64_t> key(const GraphConv& g, int device, bool allow_tf32, const int64_t alignment[3]) {
  std::vector<int64_t> k = {static_cast<int64_t>(g.op), device, allow_tf32 ? 1 : 0, g.datatype};
  for (const GraphTensor* t : {&g.x, &g.w, &g.y})
    for (int i = 0; i < 4; i++) k.push_back(t->dim[i]), k.push_back(t->stride[i]);
  for (int i = 0; i < 2; i++) k.push_back(g.pad[i]), k.push_back(g.stride[i]), k.push_back(g.dilation[i]);
  for (int i = 0; i < 3; i++) k.push_back(alignment[i]);
  return k;
}

Mode mode_from(const char* value) {
  if (!value) return Mode::kOff;
  if (std::strcmp(value, "1") == 0) return Mode::kFirst;
  if (std::strcmp(value, "2") == 0) return Mode::kOnly;
  return Mode::kOff;
}

}  // namespace nnc::cudnn_graph_plan
