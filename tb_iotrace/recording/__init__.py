"""The capture layer: native recording sessions (:mod:`.session`), the public
``enable``/``capture`` API (:mod:`.api`) and the TensorFlow and JAX profiler glue
(:mod:`.tensorflow`, :mod:`.jax`; they share :mod:`.window` and :mod:`.importhook`).
Only this layer (and what starts it: ``tb-iotrace run``, the package facade) loads the
interposer. (Named ``recording`` because ``tb_iotrace.capture`` is the public function.)"""
