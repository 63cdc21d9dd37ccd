/* fpull: feature-aware OCI registry client. The umbrella header. */
#ifndef FPULL_H
#define FPULL_H

#include "common.h"
#include "version.h"
#include "error.h"
#include "log.h"
#include "ref.h"
#include "manifest.h"
#include "features.h"
#include "match.h"
#include "detect.h"
#include "config.h"
#include "registry.h"
#include "cache.h"
#include "unpack.h"
#include "policy.h"
#include "pull.h"
#include "bundle.h"
#include "layout.h"
#include "spec.h"
#include "login.h"
#include "components.h"
#include "serve.h"

#endif
