/**
 * The mock plugin: client requests answered from declared interceptors instead of the
 * network, in the shape of undici's `MockAgent`, and record/replay of real exchanges.
 * See docs/mock.md.
 */
export { MockAgent, mock, setDefaultMockPlugins, type MockOptions } from './agent.js';
export { MockNotMatchedError, MockPendingError } from './errors.js';
export {
  MockInterceptor,
  MockScope,
  type MockInterceptOptions,
  type MockInterceptorInfo,
  type MockPathMatcher,
  type MockValueMatcher,
  type MockHeadersMatcher,
  type MockBodyMatcher,
  type MockQuery,
  type MockRequest,
  type MockReplyBody,
  type MockReplyOptions,
  type MockReplyData,
  type MockReplyFunction,
  type MockErrorCode,
} from './interceptor.js';
export type { Recording, RecordedExchange, RecordedBody } from './record.js';
