#pragma once
// One real device's step of a replay (internal to exec/replay): a task executor that runs each of
// the device's tasks, in the predicted order, as the task says (one member function per task
// kind), after its predecessors' members that feed it, and re-derives nothing: op lists and
// collective calls come from the task (TaskGraph::ops_of, calls_of; payload.hpp), the groups from
// dp_layout and communicators.hpp. replay() sets up a ReplayRun once, a StepState per step, and
// runs a DeviceRunner per local real device and step, each on its own thread.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/backend.hpp"
#include "exec/replay/communicators.hpp"
#include "exec/replay/dp_groups.hpp"
#include "exec/replay/ops.hpp"
#include "exec/replay/payload.hpp"
#include "exec/replay/replay.hpp"
#include "exec/replay/routing.hpp"
#include "sim/io/trace_json.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::exec {

/// A MoE layer's routing's key: (folded device, expert_tp · ep block, micro-batch, layer): the
/// EP groups of one block (one per expert_tp rank) route the same tokens.
using RoutingKey = std::tuple<std::uint32_t, int, int, int>;

inline constexpr std::uint32_t kNoLaunch = 0xffffffffu;

/// What every device of a run shares, set up once by replay() and read by the device threads
/// (each uses only its own devices' scratch and communicators). Members are destroyed in reverse
/// order: the communicators before the devices they run on.
struct ReplayRun {
  ReplayRun(const Scenario& scenario, const plan::Plan& plan, const schedule::TaskGraph& graph, const DpLayout& dp,
            const ReplayOptions& options)
      : s(scenario), p(plan), g(graph), layout(dp), o(options) {}
  const Scenario& s;
  const plan::Plan& p;
  const schedule::TaskGraph& g;
  const DpLayout& layout;
  const ReplayOptions& o;
  ProcessGroup* world = nullptr;  ///< under mpirun (one process per real device), else null
  int me = -1;                    ///< this process's real device under mpirun
  bool moe_ep = false;            ///< a MoE model with ep > 1
  int local_experts = 0;          ///< experts per EP rank (moe_ep)
  bool wide = false;              ///< fp32 training: payloads of one fp32 value per element
  int max_count = 1;              ///< the most real devices one folded device stands for
  /// Per folded device, its tasks in the predicted order (a valid topological order).
  std::vector<std::vector<std::uint32_t>> order;
  std::vector<std::vector<std::uint32_t>> preds;  ///< per task
  /// Per task, the overlapped EP all-to-all (Task::overlapped) whose exchange starts when it
  /// ends (the all-to-all's own unit's last task), else kNoLaunch.
  std::vector<std::uint32_t> launches;
  std::vector<OpContext> ctx;                     ///< per folded device
  /// Per folded device, the parameters whose Adam pass moves the cost model's optimizer bytes.
  std::vector<std::size_t> adam_params;
  /// Every EP group's routing of each MoE layer and micro-batch, drawn once (each member and
  /// every step routes alike).
  std::map<RoutingKey, LayerRouting> routing;
  std::vector<std::unique_ptr<Device>> devices;  ///< per real device; null where another process drives it
  std::vector<Scratch> scratch;                  ///< per real device
  ReplayComms comms;
  /// Under mpirun, dependencies between processes: a token when a task finishes (host memory),
  /// a send task's payload (device memory) to the stage that reads it.
  std::unique_ptr<Communicator> tokens, payloads;
  /// Per real device, where this process's pipeline senders copy activations and gradients.
  std::vector<void*> inbox;

  [[nodiscard]] bool local(int real) const { return world == nullptr || real == me; }
};

/// One step's shared results, written by the device threads.
struct StepState {
  StepState(std::size_t tasks, int max_count, int real_devices, int step);
  const int step;
  /// The step's origin (host clock, ns; under mpirun rank 0's): taken when every device thread
  /// is ready (DeviceRunner::prepare), before any starts its tasks.
  std::int64_t t0 = 0;
  const int max_count;
  /// done[task · max_count + member]: member = replica · tp + rank of the task's device.
  std::vector<std::atomic<bool>> done;
  /// Timings of member 0 of every folded device (the members run the same tasks in lock step
  /// through their collectives), from t0.
  std::vector<std::int64_t> start, end;
  std::vector<io::TaskParts> parts;
  std::vector<std::pair<std::string, std::string>> error;  ///< per real device: why, hint
  std::atomic<bool> failed{false};
  std::atomic<int> first_failed{-1};  ///< the cause (the others fail because it left their groups)
  std::atomic<std::int64_t> last_end{0};  ///< over every member, not only the timed ones

  [[nodiscard]] std::atomic<bool>& flag(std::uint32_t task, int member);
};

class DeviceRunner {
 public:
  /// Member `member` (replica · tp + rank) of folded device `rep`. Requires: run.local(its real device).
  DeviceRunner(ReplayRun& run, StepState& step, std::uint32_t rep, int member);
  DeviceRunner(const DeviceRunner&) = delete;
  DeviceRunner& operator=(const DeviceRunner&) = delete;
  ~DeviceRunner();

  /// Allocates the device's resident state (weights, gradients, optimizer state) for the step,
  /// before its clock starts. A failure is recorded as run_step's are, and run_step() then
  /// runs nothing.
  void prepare();
  /// Runs the device's tasks of the step (after prepare()). On a failure (no memory, a device or communicator
  /// error) records it in the step (under mpirun hands it to ReplayOptions::on_fatal), leaves its
  /// groups, frees what it holds and marks its remaining tasks done so the others finish.
  void run_step();

 private:
  // The op lists a compute task carries, by role.
  struct TaskOps {
    const std::vector<workload::Op>* layer = nullptr;
    const std::vector<workload::Op>* dense = nullptr;
    std::vector<const std::vector<workload::Op>*> edges;  // embedding, head
  };

  bool await_predecessors(std::uint32_t id);
  bool await_member(std::uint32_t pr, int pm, int from, const std::size_t* floats);
  bool run_task(std::uint32_t id);
  void run_compute(std::uint32_t id);
  void run_tp_collective(std::uint32_t id);
  void run_dp_collective(std::uint32_t id);
  void send_message(std::uint32_t id);
  void run_optimizer();
  // One all-to-all of an EP task: its communicator, values per member.
  struct Exchange {
    Communicator* comm = nullptr;
    std::size_t per = 0;
  };
  [[nodiscard]] std::vector<Exchange> exchanges_of(std::uint32_t id) const;
  void run_all_to_all(std::uint32_t id);
  bool launch_exchange(std::uint32_t id);
  void wait_exchange();
  bool finish(std::uint32_t id, void* own);
  bool hold(std::uint32_t id, void* own);
  [[nodiscard]] std::string where(std::uint32_t id) const;
  void record_times(std::uint32_t id, const std::vector<std::int64_t>& marks);
  bool notify(std::uint32_t id);
  void fail(const std::string& why, const std::string& hint = "");

  void run_ops(const std::vector<workload::Op>& ops, bool backward, bool recompute);
  const std::vector<workload::Op>& layer_ops(const schedule::Task& t, int l, const TaskOps& lists);
  [[nodiscard]] const LayerRouting& routing_of(const schedule::Task& t, int l) const;
  void timed(int cls);
  void note(const Result<std::int64_t>& r, bool first);

  ReplayRun& run_;
  StepState& step_;
  const schedule::TaskGraph& g_;
  const std::uint32_t rep_;
  const int member_;
  const schedule::DeviceRep& info_;
  const int tp_, replica_, rank_;
  const std::size_t real_;
  Device& dev_;
  Scratch& sc_;
  const OpContext& oc_;
  Communicator& tpc_;
  Communicator* etpc_;  // the MoE block's expert_tp group, where it is below tp and above 1
  Communicator* epc_;
  // Its place in Megatron-Core's expert rank order (schedule::ep_groups): the expert_tp · ep
  // block of its device it lies in, and its EP rank there.
  const int et_, ep_block_, ep_rank_;
  const std::map<int, Communicator*>& dpcs_;  // every data-parallel collective this member joins
  // Activations held between tasks, per (chunk, micro-batch): a task allocates its block at its
  // start; at its end the block joins what that micro-batch holds, less what it frees.
  std::map<std::pair<int, int>, std::pair<void*, std::size_t>> held_;
  TpOwed tp_owed_;  // this device's TP calls' fractions, carried from task to task
  void* base_ptr_ = nullptr;
  bool prepared_ = false;
  std::set<std::pair<std::uint32_t, int>> received_;  // (task, process) already heard of
  // The task being run: its marks' op classes (a mark follows every timed op), a collective's
  // real start (when its last member arrived), the first communicator error.
  std::vector<int> mark_class_;
  std::int64_t began_ = -1;
  std::string comm_error_;
  std::vector<workload::Op> routed_;  // a MoE layer's ops as this EP rank's routing runs them
  // overlap_ep_comm: the communication thread running an overlapped all-to-all's exchanges
  // beside the compute, its buffers and its first error (read after join).
  std::thread exchanger_;
  std::vector<float> xin_, xout_;
  std::string xerror_;
};

}  // namespace hetsim::exec
