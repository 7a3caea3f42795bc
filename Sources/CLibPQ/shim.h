#ifndef SWITCHBOARD_CLIBPQ_SHIM_H
#define SWITCHBOARD_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
