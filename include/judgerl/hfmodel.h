/* hfmodel.h - Hugging Face models: config.json, generation_config.json and the tensor list
 * (hfconfig.h), model directories with their weights (hfdir.h) */
#ifndef JUDGERL_HFMODEL_H
#define JUDGERL_HFMODEL_H

#include "judgerl/hfconfig.h"
#include "judgerl/hfdir.h"

#endif
