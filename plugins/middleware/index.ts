/**
 * Server middleware, the reference's `HTTP.Handlers`: {@link handlerTimeout},
 * {@link loggingMiddleware} and the loggers they write to, plus the router names the
 * reference also keeps in `Handlers` (`Router`, `register`, `getRoute`, `getParams`,
 * `getParam`). No kernel plugin: middleware wraps handlers, it taps no hook.
 */
import { getParam, getParams, getRoute, register, Router } from '../router/index.js';
import { createLogger, getDefaultLogger, setDefaultLogger } from './logger.js';
import { loggingMiddleware } from './logging.js';
import { handlerTimeout } from './timeout.js';

export { handlerTimeout, HANDLER_TIMEOUT_MESSAGE, type HandlerTimeoutOptions } from './timeout.js';
export { loggingMiddleware, type LoggingOptions, type AccessRecord } from './logging.js';
export { createLogger, getDefaultLogger, setDefaultLogger, LOG_LEVELS, type Logger, type LoggerOptions, type LogFn, type LogLevel } from './logger.js';

/** The reference's `HTTP.Handlers` namespace. */
export const Handlers = Object.freeze({
  handlerTimeout,
  loggingMiddleware,
  createLogger,
  getDefaultLogger,
  setDefaultLogger,
  Router,
  register,
  getRoute,
  getParams,
  getParam,
});
