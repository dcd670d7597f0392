"""The custom_op benchmark (GPU) and the sweeps and profiles behind softmax_launch's constants."""
