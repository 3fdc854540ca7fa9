"""Engine-agnostic control of a step: the controller protocol, generic controllers, the step controller that
drives a method's controllers, and the loss set-up an engine adapter receives."""
