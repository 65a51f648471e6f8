// CPU_REF kernels of BATCH_NORM, LAYER_NORM, GROUP_NORM and RMSNORM: every
// element through its tensor's own strides, statistics in double by two
// passes (mean, then the squared deviations), results rounded once into the
// output type.
#include <cmath>
#include <vector>

#include "cmd/common/axes.hpp"
#include "cmd/norm/norm.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"

namespace nnc::norm {

namespace {

// One normalisation problem: x's layout, the axes the statistics run over, and
// whether the per-element parameters (scale, bias, dscale, dbias) are indexed
// by the statistics group (batch norm: per channel) or by position inside it
// (layer norm: per normalised element).
struct Problem {
  Layout x;
  unsigned mask = 0;
  bool param_per_group = true;
  size_t groups = 1, group_size = 1;

  size_t group_of(const int* index) const {
    size_t k = 0;
    for (int i = 0; i < x.nd; i++)
      if (!((mask >> i) & 1u)) k = k * static_cast<size_t>(x.dim[i]) + static_cast<size_t>(index[i]);
    return k;
  }
  size_t inside_of(const int* index) const {
    size_t k = 0;
    for (int i = 0; i < x.nd; i++)
      if ((mask >> i) & 1u) k = k * static_cast<size_t>(x.dim[i]) + static_cast<size_t>(index[i]);
    return k;
  }
  size_t param_of(const int* index) const { return param_per_group ? group_of(index) : inside_of(index); }
};

Problem problem(const ccv_nnc_tensor_t* x, const int* axis, int count, bool param_per_group) {
  Problem p;
  p.x = layout_of(x, "x");
  p.mask = axis_mask("normalisation", axis, count, p.x.nd);
  p.param_per_group = param_per_group;
  for (int i = 0; i < p.x.nd; i++) {
    if ((p.mask >> i) & 1u)
      p.group_size *= static_cast<size_t>(p.x.dim[i]);
    else
      p.groups *= static_cast<size_t>(p.x.dim[i]);
  }
  return p;
}

// Values of a small tensor (NULL: `fallback` everywhere), as doubles in row-major order.
std::vector<double> read_small(const ccv_nnc_tensor_t* t, size_t n, double fallback) {
  std::vector<double> v(n, fallback);
  if (!t) return v;
  const Layout l = layout_of(t, "parameter");
  for (size_t i = 0; i < n; i++) v[i] = load_double(at_linear(l, i), l.datatype);
  return v;
}

void write_small(ccv_nnc_tensor_t* t, const std::vector<double>& v) {
  if (!t) return;
  const Layout l = layout_of(t, "output");
  for (size_t i = 0; i < v.size(); i++) store_double(at_linear(l, i), l.datatype, v[i]);
}

// Batch mean and biased variance of each group.
void statistics(const Problem& p, std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(p.groups, 0.0);
  var.assign(p.groups, 0.0);
  for_each_index(p.x.dim.data(), p.x.nd,
                 [&](const int* i) { mean[p.group_of(i)] += load_double(p.x.at(i), p.x.datatype); });
  for (double& m : mean) m /= static_cast<double>(p.group_size);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const double d = load_double(p.x.at(i), p.x.datatype) - mean[p.group_of(i)];
    var[p.group_of(i)] += d * d;
  });
  for (double& v : var) v /= static_cast<double>(p.group_size);
}

// y = (x - mean) * inv_std * scale + bias.
void normalise(const Problem& p, const ccv_nnc_tensor_t* yt, const std::vector<double>& mean,
               const std::vector<double>& inv_std, const std::vector<double>& scale, const std::vector<double>& bias) {
  const Layout y = layout_of(yt, "y");
  // Read every x before writing y at the same index, so y may be x.
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.group_of(i), q = p.param_of(i);
    const double v = (load_double(p.x.at(i), p.x.datatype) - mean[k]) * inv_std[k] * scale[q] + bias[q];
    store_double(y.at(i), y.datatype, v);
  });
}

// Gradients of y = xhat * scale + bias where xhat = (x - mean) * inv_std; with
// `batch_statistics` the mean and inv_std are functions of x (training).
void backward(const Problem& p, const ccv_nnc_tensor_t* gt, ccv_nnc_tensor_t* dxt, ccv_nnc_tensor_t* dscale,
              ccv_nnc_tensor_t* dbias, const std::vector<double>& mean, const std::vector<double>& inv_std,
              const std::vector<double>& scale, size_t params, bool batch_statistics, std::vector<double>* sums_h = nullptr,
              std::vector<double>* sums_hx = nullptr) {
  const Layout g = layout_of(gt, "g");
  std::vector<double> sh(p.groups, 0.0), shx(p.groups, 0.0), ds(params, 0.0), db(params, 0.0);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.group_of(i), q = p.param_of(i);
    const double gv = load_double(g.at(i), g.datatype);
    const double xhat = (load_double(p.x.at(i), p.x.datatype) - mean[k]) * inv_std[k];
    const double h = gv * scale[q];
    sh[k] += h;
    shx[k] += h * xhat;
    ds[q] += gv * xhat;
    db[q] += gv;
  });
  write_small(dscale, ds);
  write_small(dbias, db);
  if (sums_h) *sums_h = sh;  // per group: sum of g * scale, and of g * scale * xhat
  if (sums_hx) *sums_hx = shx;
  if (!dxt) return;
  const Layout dx = layout_of(dxt, "dx");
  const double n = static_cast<double>(p.group_size);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.group_of(i), q = p.param_of(i);
    const double h = load_double(g.at(i), g.datatype) * scale[q];
    double v = h;
    if (batch_statistics) {
      const double xhat = (load_double(p.x.at(i), p.x.datatype) - mean[k]) * inv_std[k];
      v = h - sh[k] / n - xhat * shx[k] / n;
    }
    store_double(dx.at(i), dx.datatype, v * inv_std[k]);
  });
}

std::vector<double> inv_std_of(const std::vector<double>& var, double epsilon) {
  std::vector<double> inv(var.size());
  for (size_t i = 0; i < var.size(); i++) inv[i] = 1.0 / std::sqrt(var[i] + epsilon);
  return inv;
}

// GROUP_NORM: each element's statistics index runs over the kept axes in
// row-major order, the group axis counting groups (channel / (C / G)).
struct GroupProblem {
  Layout x;
  int ga = 0, groups = 1;
  unsigned mask = 0;
  size_t per_group = 1, stats = 1, group_size = 1, channels = 1;

  size_t stat_of(const int* index) const {
    size_t k = 0;
    for (int i = 0; i < x.nd; i++) {
      if (i == ga)
        k = k * static_cast<size_t>(groups) + static_cast<size_t>(index[i]) / per_group;
      else if (!((mask >> i) & 1u))
        k = k * static_cast<size_t>(x.dim[i]) + static_cast<size_t>(index[i]);
    }
    return k;
  }
};

GroupProblem group_problem(const ccv_nnc_cmd_t& cmd, const ccv_nnc_tensor_t* x) {
  GroupProblem p;
  p.x = layout_of(x, "x");
  p.ga = cmd.info.gnorm.group_axis;
  p.groups = cmd.info.gnorm.groups;
  p.mask = gnorm_reduce_mask(cmd);
  p.channels = static_cast<size_t>(p.x.dim[p.ga]);
  p.per_group = p.channels / static_cast<size_t>(p.groups);
  p.group_size = p.per_group;
  p.stats = static_cast<size_t>(p.groups);
  for (int i = 0; i < p.x.nd; i++) {
    if (i == p.ga) continue;
    if ((p.mask >> i) & 1u)
      p.group_size *= static_cast<size_t>(p.x.dim[i]);
    else
      p.stats *= static_cast<size_t>(p.x.dim[i]);
  }
  return p;
}

}  // namespace

NNC_KERNEL(gnorm_forward_ref) {
  const GroupNormIo io = group_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  const GroupProblem p = group_problem(cmd, io.x);
  std::vector<double> mean(p.stats, 0.0), var(p.stats, 0.0);
  for_each_index(p.x.dim.data(), p.x.nd,
                 [&](const int* i) { mean[p.stat_of(i)] += load_double(p.x.at(i), p.x.datatype); });
  for (double& m : mean) m /= static_cast<double>(p.group_size);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const double d = load_double(p.x.at(i), p.x.datatype) - mean[p.stat_of(i)];
    var[p.stat_of(i)] += d * d;
  });
  for (double& v : var) v /= static_cast<double>(p.group_size);
  const std::vector<double> inv = inv_std_of(var, cmd.info.gnorm.epsilon);
  const std::vector<double> scale = read_small(io.scale, p.channels, 1.0), bias = read_small(io.bias, p.channels, 0.0);
  write_small(io.saved_mean, mean);
  write_small(io.saved_inv_std, inv);
  const Layout y = layout_of(io.y, "y");
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.stat_of(i), c = static_cast<size_t>(i[p.ga]);
    const double v = (load_double(p.x.at(i), p.x.datatype) - mean[k]) * inv[k] * scale[c] + bias[c];
    store_double(y.at(i), y.datatype, v);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(gnorm_backward_ref) {
  const GroupNormIo io = group_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  const GroupProblem p = group_problem(cmd, io.x);
  const std::vector<double> mean = read_small(io.saved_mean, p.stats, 0.0),
                            inv = read_small(io.saved_inv_std, p.stats, 1.0),
                            scale = read_small(io.scale, p.channels, 1.0);
  const Layout g = layout_of(io.g, "g");
  std::vector<double> sh(p.stats, 0.0), shx(p.stats, 0.0), ds(p.channels, 0.0), db(p.channels, 0.0);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.stat_of(i), c = static_cast<size_t>(i[p.ga]);
    const double gv = load_double(g.at(i), g.datatype);
    const double xhat = (load_double(p.x.at(i), p.x.datatype) - mean[k]) * inv[k];
    sh[k] += gv * scale[c];
    shx[k] += gv * scale[c] * xhat;
    ds[c] += gv * xhat;
    db[c] += gv;
  });
  write_small(io.dscale, ds);
  write_small(io.dbias, db);
  if (!io.dx) return CCV_NNC_EXEC_SUCCESS;
  const Layout dx = layout_of(io.dx, "dx");
  const double n = static_cast<double>(p.group_size);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.stat_of(i), c = static_cast<size_t>(i[p.ga]);
    const double xhat = (load_double(p.x.at(i), p.x.datatype) - mean[k]) * inv[k];
    const double h = load_double(g.at(i), g.datatype) * scale[c];
    store_double(dx.at(i), dx.datatype, inv[k] * (h - sh[k] / n - xhat * shx[k] / n));
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(rmsnorm_forward_ref) {
  const RmsNormIo io = rmsnorm_forward_io(inputs, input_size, outputs, output_size);
  const Problem p = problem(io.x, cmd.info.rmsnorm.axis, cmd.info.rmsnorm.count, false);
  std::vector<double> ms(p.groups, 0.0);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const double v = load_double(p.x.at(i), p.x.datatype);
    ms[p.group_of(i)] += v * v;
  });
  for (double& m : ms) m /= static_cast<double>(p.group_size);
  const std::vector<double> inv = inv_std_of(ms, cmd.info.rmsnorm.epsilon);
  const std::vector<double> scale = read_small(io.scale, p.group_size, 1.0);
  write_small(io.saved_inv_std, inv);
  const Layout y = layout_of(io.y, "y");
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const double v = load_double(p.x.at(i), p.x.datatype) * inv[p.group_of(i)] * scale[p.inside_of(i)];
    store_double(y.at(i), y.datatype, v);
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(rmsnorm_backward_ref) {
  const RmsNormIo io = rmsnorm_backward_io(inputs, input_size, outputs, output_size);
  const Problem p = problem(io.x, cmd.info.rmsnorm.axis, cmd.info.rmsnorm.count, false);
  const std::vector<double> inv = read_small(io.saved_inv_std, p.groups, 1.0),
                            scale = read_small(io.scale, p.group_size, 1.0);
  const Layout g = layout_of(io.g, "g");
  std::vector<double> shx(p.groups, 0.0), ds(p.group_size, 0.0);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.group_of(i), q = p.inside_of(i);
    const double gv = load_double(g.at(i), g.datatype);
    const double xhat = load_double(p.x.at(i), p.x.datatype) * inv[k];
    shx[k] += gv * scale[q] * xhat;
    ds[q] += gv * xhat;
  });
  write_small(io.dscale, ds);
  if (!io.dx) return CCV_NNC_EXEC_SUCCESS;
  const Layout dx = layout_of(io.dx, "dx");
  const double n = static_cast<double>(p.group_size);
  for_each_index(p.x.dim.data(), p.x.nd, [&](const int* i) {
    const size_t k = p.group_of(i), q = p.inside_of(i);
    const double xhat = load_double(p.x.at(i), p.x.datatype) * inv[k];
    const double h = load_double(g.at(i), g.datatype) * scale[q];
    store_double(dx.at(i), dx.datatype, inv[k] * (h - xhat * shx[k] / n));
  });
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(bnorm_forward_ref) {
  const BatchNormIo io = batch_norm_forward_io(inputs, input_size, outputs, output_size);
  const Problem p = problem(io.x, cmd.info.bnorm.axis, cmd.info.bnorm.count, true);
  const double eps = cmd.info.bnorm.epsilon;
  const std::vector<double> scale = read_small(io.scale, p.groups, 1.0), bias = read_small(io.bias, p.groups, 0.0);
  if (cmd.info.bnorm.is_test) {
    const std::vector<double> mean = read_small(io.mean, p.groups, 0.0), var = read_small(io.var, p.groups, 1.0);
    normalise(p, io.y, mean, inv_std_of(var, eps), scale, bias);
    return CCV_NNC_EXEC_SUCCESS;
  }
  std::vector<double> mean, var;
  statistics(p, mean, var);
  const std::vector<double> inv = inv_std_of(var, eps);
  const double m = cmd.info.bnorm.momentum;
  if (io.out_mean) {
    std::vector<double> r = read_small(io.mean, p.groups, 0.0);
    for (size_t k = 0; k < p.groups; k++) r[k] = r[k] * m + mean[k] * (1 - m);
    write_small(io.out_mean, r);
  }
  if (io.out_var) {
    std::vector<double> r = read_small(io.var, p.groups, 0.0);
    for (size_t k = 0; k < p.groups; k++) r[k] = r[k] * m + var[k] * (1 - m);
    write_small(io.out_var, r);
  }
  write_small(io.saved_mean, mean);
  write_small(io.saved_inv_std, inv);
  normalise(p, io.y, mean, inv, scale, bias);
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(bnorm_backward_ref) {
  const BatchNormIo io = batch_norm_backward_io(inputs, input_size, outputs, output_size);
  const Problem p = problem(io.x, cmd.info.bnorm.axis, cmd.info.bnorm.count, true);
  const std::vector<double> scale = read_small(io.scale, p.groups, 1.0);
  std::vector<double> mean, inv;
  if (cmd.info.bnorm.is_test) {
    mean = read_small(io.mean, p.groups, 0.0);
    inv = inv_std_of(read_small(io.var, p.groups, 1.0), cmd.info.bnorm.epsilon);
  } else {
    mean = read_small(io.saved_mean, p.groups, 0.0);
    inv = read_small(io.saved_inv_std, p.groups, 1.0);
  }
  std::vector<double> sh, shx;
  backward(p, io.g, io.dx, io.dscale, io.dbias, mean, inv, scale, p.groups, !cmd.info.bnorm.is_test, &sh, &shx);
  // libnnc's outputs 3 and 4, the gradients of the running mean and var: y
  // reads them only in inference (is_test), where y = scale (x - mean) / sqrt(var + eps) + bias.
  if (io.dmean || io.dvar) {
    std::vector<double> dmean(p.groups, 0.0), dvar(p.groups, 0.0);
    if (cmd.info.bnorm.is_test)
      for (size_t k = 0; k < p.groups; k++) {
        dmean[k] = -inv[k] * sh[k];
        dvar[k] = -0.5 * inv[k] * inv[k] * shx[k];
      }
    write_small(io.dmean, dmean);
    write_small(io.dvar, dvar);
  }
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(lnorm_forward_ref) {
  const LayerNormIo io = layer_norm_forward_io(cmd, inputs, input_size, outputs, output_size);
  const Problem p = problem(io.x, cmd.info.lnorm.axis, cmd.info.lnorm.count, false);
  std::vector<double> mean, var;
  statistics(p, mean, var);
  const std::vector<double> inv = inv_std_of(var, cmd.info.lnorm.epsilon);
  write_small(io.saved_mean, mean);
  write_small(io.saved_inv_std, inv);
  normalise(p, io.y, mean, inv, read_small(io.scale, p.group_size, 1.0), read_small(io.bias, p.group_size, 0.0));
  return CCV_NNC_EXEC_SUCCESS;
}

NNC_KERNEL(lnorm_backward_ref) {
  const LayerNormIo io = layer_norm_backward_io(cmd, inputs, input_size, outputs, output_size);
  const Problem p = problem(io.x, cmd.info.lnorm.axis, cmd.info.lnorm.count, false);
  backward(p, io.g, io.dx, io.dscale, io.dbias, read_small(io.saved_mean, p.groups, 0.0),
           read_small(io.saved_inv_std, p.groups, 1.0), read_small(io.scale, p.group_size, 1.0), p.group_size, true);
  return CCV_NNC_EXEC_SUCCESS;
}

}  // namespace nnc::norm
