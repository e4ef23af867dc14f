// The doctor's full set of checks as one library call (issue 44): `ember doctor` and
// `ember.doctor()` both call run_doctor, so the same machine gives the same checks from either.
#include "ember/env/doctor.h"

namespace ember::env {

DoctorReport run_doctor(const DoctorOptions& options) {
  DoctorReport r;
  r.facts = probe_environment();
  if (options.audit_python) {
    r.facts.pythons = find_pythons(options.pythons, options.running_python);
    audit_pythons(r.facts.pythons, options.python_timeout_ms);
  }
  find_library_copies(r.facts);  // after the audit: its interpreters' nvidia-* wheels are places too
  r.verdict = diagnose(r.facts);
  return r;
}

}  // namespace ember::env
