/**
 * What clients and servers need of a kernel: its boot, its hook table, and which plugins it
 * has. A `Kernel` is one. Clients and servers take this interface rather than the class, so the
 * kernel can make them (`kernel.client()`, `kernel.serve()`) without the two depending on each
 * other.
 */
import type { KernelHooks, TappedHooks } from './hooks.js';

/**
 * Where a kernel is in its life: `idle` (taking plugins) → `booting` (in `ready()`) →
 * `ready` → `closing` → `closed`; `failed` when `ready()` rejected.
 */
export type KernelState = 'idle' | 'booting' | 'ready' | 'closing' | 'closed' | 'failed';

/** A booted or bootable hook table with its plugins: what `Client`, `Server` and `upgradeRequest` run. */
export interface HookHost {
  /** Every hook, for taps. */
  readonly hooks: KernelHooks;
  /** Where the host is in its life; clients and servers boot it (`ready()`) unless it is `ready`. */
  readonly state: KernelState;
  /** The hooks that have taps, resolved by `ready()`. */
  readonly tapped: TappedHooks;
  /** Boots the host (loads its plugins); the same promise on every call. */
  ready(): Promise<unknown>;
  /** True when a plugin of this name is loaded or registered to load. */
  isRegistered(name: string): boolean;
}
