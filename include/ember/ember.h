// The whole public API in one include.
#pragma once

#include "ember/autograd/node.h"
#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/generator.h"
#include "ember/core/settings.h"
#include "ember/core/tensor.h"
#include "ember/ops.h"
#include "ember/nn/init.h"
#include "ember/nn/layers.h"
#include "ember/nn/models.h"
#include "ember/nn/spec.h"
#include "ember/nn/module.h"
#include "ember/nn/state_dict.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
