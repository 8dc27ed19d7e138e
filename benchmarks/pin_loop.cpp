// Pinocchio's articulated-body algorithm in a compiled loop, for benchmarks/run.py chain_rhs:
// the peer called the way our kernel is called there (no Python between calls).
//
// The serial chain of benchmarks/models.py chain_links(n), built as peer_pinocchio.chain builds
// it in Python: joint k a revolute joint about the parent link frame's z ('z') or y ('y') at
// offset[k] in the parent's frame, body k of mass[k] with its centre of mass com[k] and
// principal inertias inertia[k] about it along the link axes. peer_pinocchio.compiled_chain_rhs
// compiles this file into a shared library against the pin wheel's headers and libraries and
// calls it through ctypes, once per block of calls.
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/aba.hpp>

#include <string>

namespace {

struct Chain {
  pinocchio::Model model;
  pinocchio::Data data;
  Eigen::VectorXd q, v, tau;
  explicit Chain(const pinocchio::Model &m)
      : model(m), data(m), q(m.nq), v(m.nv), tau(Eigen::VectorXd::Zero(m.nv)) {}
};

}  // namespace

extern "C" {

// A chain of n links (axes: n characters 'z' or 'y'; offset, com, inertia: 3 n values, mass: n,
// gravity: 3 values [m/s^2]); null on a bad axis character or when Pinocchio throws (no C++
// exception crosses into the caller).
void *pin_chain_new(int n, const char *axes, const double *offset, const double *mass,
                    const double *com, const double *inertia, const double *gravity) try {
  pinocchio::Model model;
  model.gravity.linear(Eigen::Vector3d(gravity[0], gravity[1], gravity[2]));
  pinocchio::JointIndex parent = 0;
  for (int k = 0; k < n; ++k) {
    const pinocchio::SE3 placement(Eigen::Matrix3d::Identity(),
                                   Eigen::Vector3d(offset[3 * k], offset[3 * k + 1], offset[3 * k + 2]));
    const std::string name = "j" + std::to_string(k);
    if (axes[k] == 'z')
      parent = model.addJoint(parent, pinocchio::JointModelRZ(), placement, name);
    else if (axes[k] == 'y')
      parent = model.addJoint(parent, pinocchio::JointModelRY(), placement, name);
    else
      return nullptr;
    const Eigen::Vector3d c(com[3 * k], com[3 * k + 1], com[3 * k + 2]);
    const Eigen::Matrix3d I = Eigen::Vector3d(inertia[3 * k], inertia[3 * k + 1], inertia[3 * k + 2]).asDiagonal();
    model.appendBodyToJoint(parent, pinocchio::Inertia(mass[k], c, I), pinocchio::SE3::Identity());
  }
  return new Chain(model);
} catch (...) {
  return nullptr;
}

// k calls of pinocchio::aba at (q, v, tau = 0); the accelerations of the last [rad/s^2] into ddq.
void pin_chain_aba(void *handle, const double *q, const double *v, long k, double *ddq) {
  Chain &c = *static_cast<Chain *>(handle);
  c.q = Eigen::Map<const Eigen::VectorXd>(q, c.model.nq);
  c.v = Eigen::Map<const Eigen::VectorXd>(v, c.model.nv);
  for (long i = 0; i < k; ++i) pinocchio::aba(c.model, c.data, c.q, c.v, c.tau);
  Eigen::Map<Eigen::VectorXd>(ddq, c.model.nv) = c.data.ddq;
}

void pin_chain_free(void *handle) { delete static_cast<Chain *>(handle); }
}
