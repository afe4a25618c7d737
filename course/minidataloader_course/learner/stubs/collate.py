"""Collate: a list of samples becomes one batch (chapter 4)."""

import copy
from collections.abc import Mapping

import numpy as np
import torch


# >>> piece: default_collate (chapter 4)
def default_collate(batch):
    raise NotImplementedError  # replace this line with your code
# <<< piece: default_collate


# >>> piece: default_convert (chapter 4)
def default_convert(data):
    raise NotImplementedError  # replace this line with your code
# <<< piece: default_convert
