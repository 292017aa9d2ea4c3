"""Reference simulators: real physics engines that make the training data and judge the solver."""
