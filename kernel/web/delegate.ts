/**
 * How a light stand-in for a platform web object (a `Request` or `Response` built only when
 * needed) answers the members it does not implement itself: from the full object, made on
 * first use.
 */

/**
 * Defines on `proto` every member of the platform's `platformProto`, and every own (internal,
 * symbol-keyed) slot of `sample`, that `proto` does not define itself: methods call the
 * platform's on `full(this)`, the rest read from it. So the platform's own code handed a stand-in
 * (`new Request(r)`, `Response.prototype.clone.call(r)`) finds the full object's state.
 */
export function delegateToFull<T extends object>(proto: object, platformProto: object, sample: object, full: (self: T) => object): void {
  const delegate = (key: string | symbol): void => {
    if (key === 'constructor' || key === Symbol.toStringTag || Object.prototype.hasOwnProperty.call(proto, key)) return;
    const d = Object.getOwnPropertyDescriptor(platformProto, key);
    if (d !== undefined && typeof d.value === 'function') {
      const method = d.value as (...args: unknown[]) => unknown;
      Object.defineProperty(proto, key, {
        value(this: T, ...args: unknown[]): unknown {
          return method.apply(full(this), args);
        },
        writable: true,
        configurable: true,
      });
    } else {
      Object.defineProperty(proto, key, {
        get(this: T): unknown {
          return (full(this) as Record<string | symbol, unknown>)[key];
        },
        configurable: true,
      });
    }
  };
  for (const key of Reflect.ownKeys(platformProto)) delegate(key);
  for (const key of Reflect.ownKeys(sample)) delegate(key);
}
