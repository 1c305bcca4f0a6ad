#include "workloads/registry.h"

#include "core/error.h"
#include "workloads/conv2d/conv2d.h"
#include "workloads/ffnn/ffnn.h"
#include "workloads/matmul/matmul.h"
#include "workloads/transpose/transpose.h"
#include "workloads/vector_add/vector_add.h"

namespace trn {

const std::vector<const workload*>& all_workloads() {
    static const vector_add_workload vector_add;
    static const matmul_workload matmul;
    static const transpose_workload transpose;
    static const ffnn_workload ffnn;
    static const conv2d_workload conv2d;
    static const std::vector<const workload*> all{&conv2d, &vector_add, &matmul, &transpose, &ffnn};
    return all;
}

const workload& find_workload(const std::string& name) {
    std::string names;
    for (const workload* w : all_workloads()) {
        if (name == w->name()) return *w;
        names += (names.empty() ? "" : ", ") + std::string(w->name());
    }
    throw user_error("unknown workload '" + name + "' (available: " + names +
                     "; `sim --list-workloads` describes them)");
}

}  // namespace trn
