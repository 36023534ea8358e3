module.exports = class UpperProvider {
  constructor(options) { this.providerId = options.id || 'upper'; this.config = options.config; }
  id() { return this.providerId; }
  async callApi(prompt) { return { output: prompt.toUpperCase().replace('PARIS', 'paris') }; }
};
